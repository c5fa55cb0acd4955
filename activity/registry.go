package activity

import (
	"context"
	"slices"
	"sync"

	"github.com/orbitrun/orbit/interpreter"
)

// Action is a deterministic action that a package above the executor
// provides: shipping's git and task actions. The engine hands a worker the
// implementations (WorkerConfig.Actions) and declares their names to job
// validation (Declare), which also runs where no worker does: in the CLI,
// before it submits a run.
//
// IMPORTANT: a deterministic action may run more than once for one step
// attempt (its command redelivered after a crash), so its effect must be
// idempotent: a second call finds what the first did and reports it.
type Action struct {
	Run func(ctx context.Context, call *ActionCall) (any, error)
	// External marks an action that changes something outside the log (a
	// git repository): its activity.started is stored before it runs, as a
	// shell step's is, so that no such change lacks its record.
	External bool
}

// ActionCall is one execution of an Action: the step attempt it is for,
// its rendered config and input, and a way to record events of the step.
type ActionCall struct {
	RunID   string
	Job     string
	StepKey string
	Attempt int
	// Config is the activity's rendered config; Input the step's input.
	Config map[string]any
	Input  any
	// Workspace is the step's workspace (DESIGN §6).
	Workspace string
	// Emit appends an event of the step's run (a registered run event
	// type), parented to the step's step.started.
	Emit func(ctx context.Context, typ string, payload any) error
}

// Failure is an error as a step records it: an action returns one to say
// how it failed (kind is an events.Kind…), and whether another attempt
// could help. Anything else an action returns is an internal error, which
// is retried.
func Failure(kind string, retryable bool, format string, args ...any) error {
	return interpreter.Fail(kind, retryable, format, args...)
}

// declared holds the names of the actions the process's engine provides.
var declared = struct {
	sync.RWMutex
	names map[string]bool
}{names: map[string]bool{}}

// Declare makes names known to ValidateJob as deterministic actions. The
// engine declares the actions it gives its workers, once, before any job
// is validated; declaring a name twice is harmless. A declared action
// that a worker was not given fails its step as an unknown action. A
// built-in action's name may not be declared: the interpreter decides a
// step of a pure built-in itself (step protocol 4), whatever a worker
// was given.
func Declare(names ...string) {
	declared.Lock()
	defer declared.Unlock()
	for _, n := range names {
		if _, builtin := actions[n]; builtin {
			panic("activity: action " + n + " is built in")
		}
		declared.names[n] = true
	}
}

// isDeclared reports whether an action name was declared.
func isDeclared(name string) bool {
	declared.RLock()
	defer declared.RUnlock()
	return declared.names[name]
}

// declaredNames returns the declared names, sorted.
func declaredNames() []string {
	declared.RLock()
	defer declared.RUnlock()
	names := make([]string, 0, len(declared.names))
	for n := range declared.names {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}
