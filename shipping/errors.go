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
	// says something.
	ErrSummary = errors.New("no execution summary")
)
