package events

// Subject roots. Events live under EventsRoot, commands under CommandsRoot,
// the query API under APIRoot.
const (
	EventsRoot   = "orbit.events"
	CommandsRoot = "orbit.cmd"
	APIRoot      = "orbit.api"
)

// Aggregates an event can belong to.
const (
	AggregateRun  = "run"
	AggregateTask = "task"
)

// Token makes s usable as one subject token: characters that NATS gives a
// meaning ('.', '*', '>', whitespace) and control characters become '_'. An
// empty string becomes "_".
func Token(s string) string {
	if s == "" {
		return "_"
	}
	clean := true
	for i := 0; i < len(s); i++ {
		if badTokenByte(s[i]) {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	b := []byte(s)
	for i := range b {
		if badTokenByte(b[i]) {
			b[i] = '_'
		}
	}
	return string(b)
}

func badTokenByte(c byte) bool {
	return c == '.' || c == '*' || c == '>' || c <= ' ' || c == 0x7f
}

// EventSubject is the subject an event of type typ about the given aggregate
// is stored under: orbit.events.<aggregate>.<id>.<type>.
func EventSubject(aggregate, id, typ string) string {
	return EventsRoot + "." + aggregate + "." + Token(id) + "." + typ
}

// RunFilter is the subject filter that matches every event of one run.
func RunFilter(runID string) string {
	return EventsRoot + "." + AggregateRun + "." + Token(runID) + ".>"
}

// TaskFilter is the subject filter that matches every event of one task.
func TaskFilter(taskID string) string {
	return EventsRoot + "." + AggregateTask + "." + Token(taskID) + ".>"
}

// TypeFilter is the subject filter that matches events of one type across all
// aggregates of a kind, e.g. every run.finished.
func TypeFilter(aggregate, typ string) string {
	return EventsRoot + "." + aggregate + ".*." + typ
}

// CommandSubject is the subject of a command: orbit.cmd.<name>, where name may
// be dotted (for example "step.shell").
func CommandSubject(name string) string {
	return CommandsRoot + "." + name
}

// APISubject is the request subject of a query endpoint.
func APISubject(endpoint string) string {
	return APIRoot + "." + endpoint
}
