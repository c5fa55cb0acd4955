package gitops

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Held checkpoints (materialize: on_approval): an attempt's commits land on
// a hold branch, groundhog/<task>/held, made for the attempt at the held
// ref's commit; when the attempt is closed the held ref,
// refs/orbit/groundhog/<task>, takes the hold branch's head, the workspace
// goes back to the task branch and the hold branch is deleted. The task
// branch itself moves only with FastForward (an approval).

// HeldRefName returns the ref that holds a task's checkpoint commits:
// refs/orbit/groundhog/<task>, the task id sanitised as by
// ScratchBranchName.
func HeldRefName(task string) (string, error) {
	c, err := taskComponent(task)
	if err != nil {
		return "", err
	}
	return "refs/orbit/groundhog/" + c, nil
}

// HoldBranchName returns the branch an on_approval attempt's snapshot is
// taken on: groundhog/<task>/held.
func HoldBranchName(task string) (string, error) {
	c, err := taskComponent(task)
	if err != nil {
		return "", err
	}
	return ScratchPrefix + c + "/held", nil
}

func taskComponent(task string) (string, error) {
	name, err := ScratchBranchName(task, 1)
	if err != nil {
		return "", err
	}
	return name[len(ScratchPrefix) : len(name)-len("/day-1")], nil
}

// RefSHA returns the commit a ref (a full ref name or a branch) points at,
// and false when it does not exist.
func (r *Repo) RefSHA(ctx context.Context, ref string) (string, bool, error) {
	return r.resolve(ctx, ref)
}

// EnterHold takes the workspace, on taskBranch and clean, to a new hold
// branch: at the held ref's commit when that descends from nothing the
// task branch lacks (held work not yet approved), at the task branch's
// head otherwise. It returns the hold branch. HEAD already on the hold
// branch (a resumption) is left there.
func (r *Repo) EnterHold(ctx context.Context, task, taskBranch string) (string, error) {
	hold, err := HoldBranchName(task)
	if err != nil {
		return "", err
	}
	cur, err := r.CurrentBranch(ctx)
	if err != nil || cur == hold {
		return hold, err
	}
	if cur != taskBranch {
		return "", fmt.Errorf("%w: expected HEAD on %s, it is on %s", ErrUnexpectedBranch, taskBranch, cur)
	}
	start, err := r.holdStart(ctx, task, taskBranch)
	if err != nil {
		return "", err
	}
	switchTo := call{args: []string{"switch", "--quiet", "--no-track", "--create", hold, start}, uninterruptible: true}
	if _, err := r.run(ctx, switchTo); err != nil {
		// A switch cut short (the engine killed, the machine down) has
		// written the held commits' files but not the index: they are
		// untracked, and in the way of the same switch again.
		cleared, err2 := r.clearHalfSwitch(ctx, start)
		if err2 != nil || !cleared {
			return "", fmt.Errorf("switching to the hold branch %s at %s: %w", hold, start, err)
		}
		if _, err := r.run(ctx, switchTo); err != nil {
			return "", fmt.Errorf("switching to the hold branch %s at %s: %w", hold, start, err)
		}
	}
	return hold, nil
}

// clearHalfSwitch removes the untracked files that a switch to target
// would write, when each of them already holds what target has there (a
// switch to target left them): the switch then writes them again, and
// nothing is lost. When any of them differs (a file of the user's) it
// removes none and reports false.
func (r *Repo) clearHalfSwitch(ctx context.Context, target string) (bool, error) {
	st, err := r.readStatus(ctx, true)
	if err != nil {
		return false, err
	}
	var same []string
	for _, path := range st.untracked() {
		out, err := r.run(ctx, call{args: []string{"rev-parse", "--verify", "--quiet", target + ":" + path}, readOnly: true})
		if exitCode(err) == 1 {
			continue // not in target's way
		}
		if err != nil {
			return false, err
		}
		want := strings.TrimSpace(string(out))
		got, err := r.run(ctx, call{args: []string{"hash-object", "--", path}, readOnly: true})
		if err != nil {
			return false, err
		}
		if strings.TrimSpace(string(got)) != want {
			return false, nil
		}
		same = append(same, path)
	}
	for _, path := range same {
		if err := os.Remove(filepath.Join(r.Dir, path)); err != nil {
			return false, err
		}
	}
	return len(same) > 0, nil
}

// holdStart is the commit the next held checkpoint builds on: the held
// ref's, unless the task branch already contains it.
func (r *Repo) holdStart(ctx context.Context, task, taskBranch string) (string, error) {
	ref, err := HeldRefName(task)
	if err != nil {
		return "", err
	}
	branch, err := r.BranchSHA(ctx, taskBranch)
	if err != nil {
		return "", err
	}
	held, ok, err := r.resolve(ctx, ref)
	if err != nil || !ok {
		return branch, err
	}
	contained, err := r.IsAncestor(ctx, held, branch)
	if err != nil || contained {
		return branch, err
	}
	return held, nil
}

// LeaveHold ends an on_approval attempt that is closed (HEAD on the hold
// branch or the task branch, not on a scratch branch): the held ref takes
// the hold branch's head, when that holds anything the task branch lacks,
// the workspace switches back to the task branch, and the hold branch is
// deleted. Without a hold branch, or with HEAD on another branch (a
// scratch branch no attempt closed yet), it does nothing. It can be called
// again after a crash at any point.
func (r *Repo) LeaveHold(ctx context.Context, task, taskBranch string) error {
	hold, err := HoldBranchName(task)
	if err != nil {
		return err
	}
	head, ok, err := r.branchHead(ctx, hold)
	if err != nil || !ok {
		return err
	}
	cur, err := r.CurrentBranch(ctx)
	if err != nil {
		return err
	}
	if cur != hold && cur != taskBranch {
		return nil // on a scratch branch: the attempt is closed first
	}
	ref, err := HeldRefName(task)
	if err != nil {
		return err
	}
	branch, err := r.BranchSHA(ctx, taskBranch)
	if err != nil {
		return err
	}
	held, _, err := r.resolve(ctx, ref)
	if err != nil {
		return err
	}
	if head != branch && head != held {
		if err := r.SetRef(ctx, ref, head, held); err != nil {
			return err
		}
	}
	if cur == hold {
		if _, err := r.run(ctx, call{
			args:            []string{"switch", "--quiet", "--no-guess", taskBranch},
			uninterruptible: true,
		}); err != nil {
			return fmt.Errorf("switching back to %s (the held work is on %s): %w", taskBranch, ref, err)
		}
	}
	if _, err := r.run(ctx, call{args: []string{"branch", "--quiet", "-D", hold}, uninterruptible: true}); err != nil {
		return fmt.Errorf("deleting the hold branch %s: %w", hold, err)
	}
	return nil
}

// SetRef points ref at sha, if it still points at old (empty: if it does
// not exist).
func (r *Repo) SetRef(ctx context.Context, ref, sha, old string) error {
	if old == "" {
		old = "0000000000000000000000000000000000000000"
	}
	if _, err := r.run(ctx, call{
		args:            []string{"update-ref", "-m", "groundhog", ref, sha, old},
		uninterruptible: true,
	}); err != nil {
		return fmt.Errorf("moving %s to %s: %w", ref, sha, err)
	}
	return nil
}

// FastForward moves branch to sha, which must descend from it
// (ErrNotFastForward otherwise, changing nothing). A checked-out branch is
// moved with its work tree, which must have no change to tracked files
// (ErrDirty).
func (r *Repo) FastForward(ctx context.Context, branch, sha string) error {
	cur, err := r.BranchSHA(ctx, branch)
	if err != nil {
		return err
	}
	if ok, err := r.IsAncestor(ctx, cur, sha); err != nil {
		return err
	} else if !ok {
		return fmt.Errorf("%w: %s is at %s, which %s does not descend from", ErrNotFastForward, branch, cur, sha)
	}
	return r.moveBranch(ctx, branch, sha, cur)
}

// ResetBranch moves branch back to sha (any commit), from old. A
// checked-out branch is moved with its work tree, which must have no change
// to tracked files (ErrDirty); untracked files are kept.
func (r *Repo) ResetBranch(ctx context.Context, branch, sha, old string) error {
	return r.moveBranch(ctx, branch, sha, old)
}

func (r *Repo) moveBranch(ctx context.Context, branch, sha, old string) error {
	head, err := r.CurrentBranch(ctx)
	if err != nil || head != branch {
		return r.SetRef(ctx, "refs/heads/"+branch, sha, old)
	}
	dirty, err := r.DirtyTracked(ctx)
	if err != nil {
		return err
	}
	if len(dirty) > 0 {
		return fmt.Errorf("%w: %d tracked file(s) with uncommitted changes: %s", ErrDirty, len(dirty), listPaths(dirty, 20))
	}
	if _, err := r.run(ctx, call{args: []string{"reset", "--quiet", "--keep", sha}, uninterruptible: true}); err != nil {
		return fmt.Errorf("moving %s to %s: %w", branch, sha, err)
	}
	return nil
}
