package events

import "time"

// RoutineSkipped records a tick of a routine's schedule that started no run
// (DESIGN §14). It is stored under the run the tick would have started (its
// id derives from the routine and the tick), which was never requested: one
// subject per tick, so a tick has one record, fired or skipped.
const RoutineSkipped = "routine.skipped"

func init() {
	register(RoutineSkipped, AggregateRun, RoutineSkippedData{})
}

// Reasons a routine's tick was skipped.
const (
	// SkipOverlap: the routine's previous run was still live and its
	// policy is overlap: forbid.
	SkipOverlap = "overlap"
	// SkipMissed: no engine was up at the tick (or the routine was
	// paused) and its missed_run policy is skip.
	SkipMissed = "missed"
	// SkipRefused: the run could not be requested (its job is not in the
	// catalog, or does not validate); Error says why.
	SkipRefused = "refused"
)

// RoutineSkippedData is a skipped tick: the routine, the tick, why, the run
// that still ran (overlap) and how many ticks the record stands for (missed
// ticks are recorded once, at the last of them).
type RoutineSkippedData struct {
	Routine string    `json:"routine"`
	Tick    time.Time `json:"tick"`
	Reason  string    `json:"reason"`
	Running string    `json:"running,omitempty"`
	Ticks   int       `json:"ticks,omitempty"`
	Error   string    `json:"error,omitempty"`
	// Retry is the retry (1, 2…) of Tick that was refused, 0 for a tick.
	Retry int `json:"retry,omitempty"`
}
