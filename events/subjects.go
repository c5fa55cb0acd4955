package events

import "strings"

// Subject roots. Events live under EventsRoot, step commands under
// StepsRoot, other commands (run requests) under CommandsRoot, the query
// API under APIRoot.
const (
	EventsRoot   = "orbit.events"
	CommandsRoot = "orbit.cmd"
	StepsRoot    = "orbit.step"
	APIRoot      = "orbit.api"
)

// StepCommandPrefix begins the name of every step command: a command named
// step.<rest> is stored in StepsStream under orbit.step.<rest>, every other
// one in CommandsStream under orbit.cmd.<name> (see CommandSubject).
const StepCommandPrefix = "step."

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

// CommandSubject is the subject of a command: orbit.step.<rest> for a step
// command (named step.<rest>), orbit.cmd.<name> for any other, where name
// may be dotted (for example "run.request").
func CommandSubject(name string) string {
	if rest, ok := strings.CutPrefix(name, StepCommandPrefix); ok {
		return StepsRoot + "." + rest
	}
	return CommandsRoot + "." + name
}

// commandStream is the stream that holds the commands named name (or a
// wildcard over names, such as "step.shell.>").
func commandStream(name string) string {
	if strings.HasPrefix(name, StepCommandPrefix) {
		return StepsStream
	}
	return CommandsStream
}

// APISubject is the request subject of a query endpoint.
func APISubject(endpoint string) string {
	return APIRoot + "." + endpoint
}
