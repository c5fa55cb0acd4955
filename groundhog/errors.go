package groundhog

import "errors"

// Why a verb sent from outside the engine (orbit mcp, orbit groundhog
// success|failure|side-effect) is refused. Each is recorded under the task
// as a groundhog.verb_refused event, with the reason and never the token.
var (
	// ErrTokenMissing: the call carried no attempt token.
	ErrTokenMissing = errors.New("no attempt token (ORBIT_ATTEMPT_TOKEN is empty)")
	// ErrTokenStale: the token was issued for an attempt that has closed.
	ErrTokenStale = errors.New("the attempt token is stale: its attempt has closed")
	// ErrTokenForeign: the engine never issued the token for this task.
	ErrTokenForeign = errors.New("the attempt token is not one this engine issued for this task")
	// ErrUnknownVerb: the verb is none of the three builtin verbs.
	ErrUnknownVerb = errors.New("unknown verb")
)

// ErrNoCLIBackend: a groundhog activity on backend cli was run by a runner
// that has no CLIBackend to give its agent the verbs.
var ErrNoCLIBackend = errors.New("the activity runs on backend cli, and this runner has no CLI backend (attempt tokens, orbit mcp)")

// ErrHeldUnapproved: a run whose activity lands commits on the task branch
// (materialize: direct) was refused because checkpoint commits of the
// task are still held for approval.
var ErrHeldUnapproved = errors.New("checkpoint commits are held for approval")
