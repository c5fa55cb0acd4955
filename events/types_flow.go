package events

// Control-flow event types: decisions of parallel, fan-out and loop steps.
const (
	StepJoin      = "step.join"
	LoopIteration = "loop.iteration"
	FanoutItem    = "fanout.item"
)

func init() {
	register(StepJoin, AggregateRun, StepJoinData{})
	register(LoopIteration, AggregateRun, LoopIterationData{})
	register(FanoutItem, AggregateRun, FanoutItemData{})
}

// JoinMember is the outcome of one branch of a parallel step or one item of
// a fan-out, as its join saw it.
type JoinMember struct {
	Key   string     `json:"key"`
	State string     `json:"state"`
	Error *ErrorInfo `json:"error,omitempty"`
}

// StepJoinData records how a parallel step or a fan-in joined its members:
// the mode, how many succeeded, and whether that was enough.
type StepJoinData struct {
	Attempt   int          `json:"attempt"`
	Mode      string       `json:"mode"` // all | any | quorum
	N         int          `json:"n,omitempty"`
	Succeeded int          `json:"succeeded"`
	Members   []JoinMember `json:"members"`
	State     string       `json:"state"` // success | failed
	Error     *ErrorInfo   `json:"error,omitempty"`
}

// LoopIterationData records the end of one loop iteration and whether the
// loop's break_when held after it.
type LoopIterationData struct {
	Attempt   int    `json:"attempt"`
	Iteration int    `json:"iteration"` // 1-based
	Item      any    `json:"item,omitempty"`
	State     string `json:"state"` // success | failed | cancelled
	Break     bool   `json:"break"`
}

// FanoutItemData records that the pipeline of one fan-out item began.
type FanoutItemData struct {
	Attempt int `json:"attempt"`
	Index   int `json:"index"` // 1-based, as in the item's key
	Item    any `json:"item"`
}
