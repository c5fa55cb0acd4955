package gitops

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
)

// MovedError is how Rewind reports that the task branch, checked out,
// moved since the snapshot (someone committed on it during the attempt):
// errors.Is(err, ErrTaskBranchMoved) holds. The task branch was not reset.
// What the attempt had left in the work tree was set aside: committed on
// the scratch branch and then taken out of the work tree, so that the next
// snapshot starts from the task branch as it is now, clean (see Rewind).
type MovedError struct {
	TaskBranch    string
	SnapshotRef   string // the task branch's commit at the snapshot
	Now           string // the task branch's commit now
	ScratchBranch string
	ScratchSHA    string // the scratch branch's head: everything of the attempt that git holds
	// SetAside are the paths taken out of the work tree by this call,
	// sorted: tracked files put back to Now, new files removed. Their
	// content is in ScratchSHA.
	SetAside []string
	// Left are changed paths left in the work tree, sorted, because they
	// may be someone else's work: the commits on the task branch since the
	// snapshot changed them too, they changed in the index and again in the
	// work tree, they are unmerged, or they changed while being set aside.
	Left []string
	// Cause, when set, is why nothing was set aside (a merge or rebase in
	// progress, a git failure).
	Cause error
}

func (e *MovedError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %s was at %s when the snapshot was taken and is at %s now; the attempt's work is on %s at %s",
		ErrTaskBranchMoved, e.TaskBranch, e.SnapshotRef, e.Now, e.ScratchBranch, e.ScratchSHA)
	if len(e.SetAside) > 0 {
		fmt.Fprintf(&b, "; the attempt's files left in the work tree were taken out of it and are kept there: %s", listPaths(e.SetAside, 20))
	}
	if len(e.Left) > 0 {
		fmt.Fprintf(&b, "; changed files that may not be the attempt's were left in place: %s", listPaths(e.Left, 20))
	}
	if e.Cause != nil {
		fmt.Fprintf(&b, "; nothing was set aside: %v", e.Cause)
	}
	return b.String()
}

// Is makes errors.Is(err, ErrTaskBranchMoved) hold.
func (e *MovedError) Is(target error) bool { return target == ErrTaskBranchMoved }

// Unwrap returns Cause.
func (e *MovedError) Unwrap() error { return e.Cause }

// Clean reports whether the work tree holds nothing of the attempt's
// beyond what is in ScratchSHA: nothing was left in place, and nothing
// stopped the setting aside.
func (e *MovedError) Clean() bool { return len(e.Left) == 0 && e.Cause == nil }

// setAside is Rewind on the task branch, checked out at now, which moved
// since the snapshot. It commits on the scratch branch (without touching
// the index or the work tree) the content of every path the attempt
// changed that the commits since the snapshot did not — tracked files
// changed in the index or the work tree, new untracked files, but neither
// the files of s.Untracked nor those the snapshot's ignore rules ignore —
// and then puts those paths back to now, removing new files only when
// they are byte for byte what was committed. It returns a *MovedError
// saying what was set aside and what was left; calling it again sets
// aside nothing more and commits nothing.
func (r *Repo) setAside(ctx context.Context, s *Snapshot, scratchHead, now string) (string, error) {
	moved := &MovedError{TaskBranch: s.TaskBranch, SnapshotRef: s.SnapshotRef, Now: now, ScratchBranch: s.ScratchBranch, ScratchSHA: scratchHead}
	fail := func(err error) (string, error) {
		moved.Cause = err
		return moved.ScratchSHA, moved
	}
	if err := r.checkNoOperation(); err != nil {
		return fail(err)
	}
	st, err := r.readStatus(ctx, true)
	if err != nil {
		return fail(err)
	}
	if st.detached || st.branch != s.TaskBranch || st.head != now {
		return fail(fmt.Errorf("%w: expected HEAD on %s at %s", ErrUnexpectedBranch, s.TaskBranch, now))
	}
	take, err := r.attemptsChanges(ctx, s, st, now, moved)
	if err != nil || len(take) == 0 {
		if err != nil {
			return fail(err)
		}
		return moved.ScratchSHA, moved
	}
	head, err := r.saveOnScratch(ctx, s, scratchHead, take)
	if err != nil {
		return fail(err)
	}
	moved.ScratchSHA = head
	if err := r.checkpoint("set-aside-saved"); err != nil {
		return head, err
	}
	removed, err := r.takeOut(ctx, head, now, take, st)
	moved.SetAside = removed
	moved.Left = uniqueSorted(append(moved.Left, notIn(take, removed)...))
	if err != nil {
		return fail(err)
	}
	return head, moved
}

// attemptsChanges returns the paths of st that setAside takes out of the
// work tree, sorted, and adds those it leaves to moved.Left.
func (r *Repo) attemptsChanges(ctx context.Context, s *Snapshot, st *workStatus, now string, moved *MovedError) ([]string, error) {
	if len(st.entries) == 0 {
		return nil, nil
	}
	out, err := r.run(ctx, call{
		args:     []string{"diff", "--name-only", "-z", "--no-renames", "--no-ext-diff", "--no-textconv", s.SnapshotRef, now, "--"},
		readOnly: true,
	})
	if err != nil {
		return nil, fmt.Errorf("listing what %s changed since the snapshot: %w", s.TaskBranch, err)
	}
	since := newPreexisting(nulFields(out))
	ignored, err := r.ignoredBySnapshot(ctx, s)
	if err != nil {
		return nil, err
	}
	keep := newPreexisting(append(slices.Clone(s.Untracked), ignored...))
	var take []string
	for _, e := range st.entries {
		switch {
		case keep.covers(e.path):
			// The user's: untracked at the snapshot, or ignored by its rules.
		case since.covers(e.path), e.kind == 'u', strings.HasSuffix(e.path, "/"),
			e.kind != '?' && e.x != '.' && e.y != '.':
			// Changed by the commits since, unmerged, an embedded
			// repository, or changed in the index and again in the work
			// tree (putting it back would lose the staged version).
			moved.Left = append(moved.Left, e.path)
		default:
			take = append(take, e.path)
		}
	}
	slices.Sort(moved.Left)
	slices.Sort(take)
	return take, nil
}

// saveOnScratch commits on the scratch branch, on top of scratchHead, the
// work tree's content of paths (a missing file: its removal), through an
// index of its own: the repository's index and work tree are not touched.
// It returns the scratch branch's new head, or scratchHead when that
// already holds exactly this content.
func (r *Repo) saveOnScratch(ctx context.Context, s *Snapshot, scratchHead string, paths []string) (string, error) {
	f, err := os.CreateTemp("", "orbit-gitops-index-")
	if err != nil {
		return "", fmt.Errorf("setting the attempt's files aside: %w", err)
	}
	index := f.Name()
	f.Close()
	os.Remove(index) // git writes it anew
	defer os.Remove(index)
	env := []string{"GIT_INDEX_FILE=" + index}

	if _, err := r.run(ctx, call{args: []string{"read-tree", scratchHead}, env: env}); err != nil {
		return "", fmt.Errorf("setting the attempt's files aside: reading %s: %w", s.ScratchBranch, err)
	}
	if _, err := r.run(ctx, call{
		args:  []string{"update-index", "--add", "--remove", "--replace", "-z", "--stdin"},
		stdin: pathspecs("", "", paths),
		env:   env,
	}); err != nil {
		return "", fmt.Errorf("setting the attempt's files aside: %w", err)
	}
	out, err := r.run(ctx, call{args: []string{"write-tree"}, env: env})
	if err != nil {
		return "", fmt.Errorf("setting the attempt's files aside: %w", err)
	}
	tree := strings.TrimSpace(string(out))
	refs, err := r.readBranches(ctx, s.ScratchBranch)
	if err != nil {
		return "", err
	}
	if ref, ok := refs[s.ScratchBranch]; !ok || ref.sha != scratchHead {
		return "", fmt.Errorf("%w: %s moved while the attempt's files were set aside", ErrUnexpectedBranch, s.ScratchBranch)
	} else if ref.tree == tree {
		return scratchHead, nil
	}
	var ident []string
	idEnv, err := r.identity(ctx, &ident)
	if err != nil {
		return "", err
	}
	out, err = r.run(ctx, call{
		args:  []string{"commit-tree", "--no-gpg-sign", "-p", scratchHead, "-F", "-", tree},
		stdin: []byte(captureMessage(s, "set aside", "the task branch moved under the attempt; its files were taken out of the work tree")),
		env:   idEnv,
	})
	if err != nil {
		return "", fmt.Errorf("setting the attempt's files aside: committing on %s: %w", s.ScratchBranch, err)
	}
	head := strings.TrimSpace(string(out))
	if err := r.SetRef(ctx, "refs/heads/"+s.ScratchBranch, head, scratchHead); err != nil {
		return "", err
	}
	return head, nil
}

// takeOut puts paths of st back to now in the index and the work tree,
// each only if its work tree content is what head holds (or it is gone
// from both), and returns those it put back, sorted.
func (r *Repo) takeOut(ctx context.Context, head, now string, paths []string, st *workStatus) ([]string, error) {
	untracked := map[string]bool{}
	for _, e := range st.entries {
		if e.kind == '?' {
			untracked[e.path] = true
		}
	}
	var tracked, removed []string
	for _, p := range paths {
		safe, err := r.sameAsCommitted(ctx, p, head)
		if err != nil {
			return removed, err
		}
		if !safe {
			if _, err := os.Lstat(r.path(p)); !errors.Is(err, os.ErrNotExist) || untracked[p] {
				continue // changed since it was read: left
			}
		}
		if !untracked[p] {
			tracked = append(tracked, p)
			continue
		}
		if err := os.Remove(r.path(p)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return removed, fmt.Errorf("taking %s out of the work tree: %w", p, err)
		}
		removed = append(removed, p)
	}
	if len(tracked) > 0 {
		if _, err := r.run(ctx, call{
			args:            []string{"restore", "--source=" + now, "--staged", "--worktree", "--pathspec-from-file=-", "--pathspec-file-nul"},
			stdin:           pathspecs("", ":(literal)", tracked),
			uninterruptible: true,
		}); err != nil {
			return removed, fmt.Errorf("putting %s back to %s: %w", listPaths(tracked, 20), now, err)
		}
		removed = append(removed, tracked...)
	}
	slices.Sort(removed)
	return removed, nil
}

// notIn returns the paths of all that are not in some.
func notIn(all, some []string) []string {
	var res []string
	for _, p := range all {
		if !slices.Contains(some, p) {
			res = append(res, p)
		}
	}
	return res
}
