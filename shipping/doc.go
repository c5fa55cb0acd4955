// Package shipping takes tasks from a backlog to a landed change (DESIGN
// §13): the task record's rules (statuses, workflow admission, who may
// record an execution summary), the worktree each shipping run works in,
// and the git and task actions of the seeded shipping jobs
// (task_auto_pipeline → task_gate_pipeline → task_local_pipeline).
//
// The executor may not import this package: the engine hands a worker
// the actions of Service.Actions and declares their names (ActionNames)
// to job validation, gives the orchestrator Service.Admission for
// invoke_and_wait, and binds agent steps to their task with Service (an
// activity.TaskBinder). Git is run by gitops.
//
// IMPORTANT: every action may run more than once for one step attempt (a
// command redelivered after a crash), so each finds what an earlier call
// did before it does anything: a worktree is found again, a commit, a
// rebase, a merge or a push that happened is reported, not repeated, and
// a task's transition is recorded once (its event id derives from the
// task, the run and the step). A resumed run never merges or pushes twice.
package shipping
