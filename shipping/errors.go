package shipping

import "errors"

// Sentinel errors of the task writes; test with errors.Is. Each is
// wrapped with a message that names the task and what was found.
var (
	// ErrTransition is a status change the task's lifecycle refuses: out of
	// done, into archived other than by Archive, a start of a task that is
	// not waiting, or a workflow taking a task that is in review or done.
	ErrTransition = errors.New("status change refused")

	// ErrInvalidTask is a task record that cannot be recorded: no title, an
	// unknown status, priority or type, a context file outside the
	// repository.
	ErrInvalidTask = errors.New("invalid task")

	// ErrSummary is a move to review without an execution summary that
	// says something, or a summary that says nothing.
	ErrSummary = errors.New("no execution summary")

	// ErrToken is a summary sent with a token that scopes no open agent
	// step of the task: missing, from a step that has ended, or another
	// task's. Nothing is recorded.
	ErrToken = errors.New("refused: the token scopes no open agent step of this task")
)
