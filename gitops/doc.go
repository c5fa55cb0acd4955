// Package gitops is Groundhog's WorkspaceSnapshot: it starts each attempt
// of a checkpoint from a clean git snapshot on a scratch branch, and ends
// it either with exactly one squash commit on the task branch
// (CommitSuccess) or by rewinding the workspace to the snapshot (Rewind),
// keeping the attempt's work on the scratch branch. It also does the git of
// shipping: worktrees (AddWorktree, RemoveWorktree), fetches into the
// remote-tracking ref, the commit of a whole work tree, a rebase that
// aborts a conflict, the fast-forward of a base where it is checked out
// (MergeFastForward) and an exact-lease push (PushLease).
//
// It drives the real git command line (2.26 or later) and is the only
// package of Orbit that runs git. Every command runs at the top level of
// the work tree with GIT_TERMINAL_PROMPT=0, LC_ALL=C, no pager,
// core.quotePath=false and machine-readable output where paths are read;
// user-supplied names are validated so that git never reads them as
// options.
//
// IMPORTANT: the package fails closed. An operation that finds the
// repository in a state it did not expect (another branch checked out,
// the task branch moved, changes it could not restore) returns an error
// and leaves the repository as it found it, with one exception: Rewind on
// a task branch that moved takes what the attempt left in the work tree
// out of it, once it is committed on the scratch branch, so that the next
// attempt starts clean (see MovedError). No operation overwrites a
// branch, loses committed or uncommitted work, puts into a commit a file
// that was untracked at the snapshot or that the snapshot's ignore rules
// ignore, or touches ignored files. Each
// of Rewind and CommitSuccess can be called again after a crash at any
// point and finishes the job.
//
// Only the squash commit of CommitSuccess runs the repository's hooks.
// The bookkeeping commands (switches, resets, the squash merge, capture
// commits on scratch branches) run with hooks disabled, so that a user's
// post-checkout or reference-transaction hook can neither run on them nor
// make them fail.
package gitops
