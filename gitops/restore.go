package gitops

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// restore brings the task branch, checked out, back to the snapshot:
// verifies it did not move, that the reset discards nothing that is not
// also in the snapshot or the scratch head, resets hard, and removes the
// untracked files that are copies of files of the scratch head.
func (r *Repo) restore(ctx context.Context, s *Snapshot, scratchHead string) error {
	if err := r.checkTaskBranch(ctx, s, scratchHead); err != nil {
		return err
	}
	return r.resetToSnapshot(ctx, s, scratchHead)
}

// resetToSnapshot is restore once the task branch, checked out, is known
// to point at the snapshot.
func (r *Repo) resetToSnapshot(ctx context.Context, s *Snapshot, scratchHead string) error {
	lost, err := r.unrecoverable(ctx, s, scratchHead)
	if err != nil {
		return err
	}
	if len(lost) > 0 {
		return fmt.Errorf("%w: %s: %d file(s) differ from both the snapshot and %s, a reset would lose them: %s",
			ErrDirty, s.TaskBranch, len(lost), s.ScratchBranch, listPaths(lost, 20))
	}
	if err := r.resetHard(ctx, s); err != nil {
		return err
	}
	if err := r.checkpoint("reset"); err != nil {
		return err
	}
	return r.removeCopies(ctx, s, scratchHead)
}

// checkTaskBranch fails with ErrTaskBranchMoved unless the task branch
// points at the snapshot.
func (r *Repo) checkTaskBranch(ctx context.Context, s *Snapshot, scratchHead string) error {
	sha, err := r.BranchSHA(ctx, s.TaskBranch)
	if err != nil {
		return err
	}
	if sha != s.SnapshotRef {
		return fmt.Errorf("%w: %s was at %s when the snapshot was taken and is at %s now; the attempt's work is on %s at %s",
			ErrTaskBranchMoved, s.TaskBranch, s.SnapshotRef, sha, s.ScratchBranch, scratchHead)
	}
	return nil
}

// resetHard resets the checked-out task branch, index and work tree to the
// snapshot. Untracked and ignored files are not touched, except a file at
// a path the snapshot has (unrecoverable reports those beforehand).
func (r *Repo) resetHard(ctx context.Context, s *Snapshot) error {
	if _, err := r.run(ctx, call{
		args:            []string{"reset", "--quiet", "--hard", s.SnapshotRef, "--"},
		uninterruptible: true,
	}); err != nil {
		return fmt.Errorf("resetting %s to %s: %w", s.TaskBranch, s.SnapshotRef, err)
	}
	return nil
}

// unrecoverable returns the tracked paths whose content, in the index or
// the work tree, is in neither the snapshot nor the scratch head: what a
// hard reset to the snapshot would lose. A file of the snapshot that is
// missing from the index but present in the work tree counts too: the
// reset would overwrite it.
func (r *Repo) unrecoverable(ctx context.Context, s *Snapshot, scratchHead string) ([]string, error) {
	var lost []string
	for _, cached := range []bool{false, true} {
		fromSnap, err := r.diffNames(ctx, s.SnapshotRef, cached, "")
		if err != nil {
			return nil, err
		}
		if len(fromSnap) == 0 {
			continue
		}
		fromScratch, err := r.diffNames(ctx, scratchHead, cached, "")
		if err != nil {
			return nil, err
		}
		inScratch := map[string]bool{}
		for _, p := range fromScratch {
			inScratch[p] = true
		}
		for _, p := range fromSnap {
			if inScratch[p] {
				lost = append(lost, p)
			}
		}
	}
	// diff reports a path of the snapshot that is not in the index as
	// deleted without looking at the work tree; a file there would be
	// overwritten by the reset.
	deleted, err := r.diffNames(ctx, s.SnapshotRef, false, "D")
	if err != nil {
		return nil, err
	}
	for _, p := range deleted {
		if _, err := os.Lstat(r.path(p)); err == nil {
			lost = append(lost, p)
		}
	}
	return uniqueSorted(lost), nil
}

// removeCopies removes the untracked files that did not exist at the
// snapshot and whose content is byte for byte the scratch head's file at
// the same path: they are left-overs of an interrupted switch or merge,
// and the scratch branch has them. Anything else is left in place.
func (r *Repo) removeCopies(ctx context.Context, s *Snapshot, scratchHead string) error {
	candidates, err := r.newUntracked(ctx, s)
	if err != nil {
		return err
	}
	for _, p := range candidates {
		if strings.HasSuffix(p, "/") { // an embedded repository
			continue
		}
		same, err := r.sameAsCommitted(ctx, p, scratchHead)
		if err != nil {
			return err
		}
		if !same {
			continue
		}
		if err := os.Remove(r.path(p)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("removing %s (a copy of %s:%s): %w", p, s.ScratchBranch, p, err)
		}
	}
	return nil
}

// sameAsCommitted reports whether the file at p in the work tree is the
// blob at p in commit (hashed as git add would store it).
func (r *Repo) sameAsCommitted(ctx context.Context, p, commit string) (bool, error) {
	want, err := r.run(ctx, call{args: []string{"rev-parse", "--verify", "--quiet", commit + ":" + p}, readOnly: true})
	if exitCode(err) == 1 {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("looking up %s in %s: %w", p, commit, err)
	}
	fi, err := os.Lstat(r.path(p))
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return false, nil
		}
		return false, err
	}
	var got []byte
	switch {
	case fi.Mode().IsRegular():
		got, err = r.run(ctx, call{args: []string{"hash-object", "--", p}, readOnly: true})
	case fi.Mode()&os.ModeSymlink != 0:
		target, lerr := os.Readlink(r.path(p))
		if lerr != nil {
			return false, lerr
		}
		got, err = r.run(ctx, call{
			args:     []string{"hash-object", "--stdin", "--no-filters"},
			stdin:    []byte(filepath.ToSlash(target)),
			readOnly: true,
		})
	default:
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("hashing %s: %w", p, err)
	}
	return strings.TrimSpace(string(got)) == strings.TrimSpace(string(want)), nil
}

// path returns the file system path of a repository path.
func (r *Repo) path(p string) string {
	return filepath.Join(r.Dir, filepath.FromSlash(p))
}

func uniqueSorted(ps []string) []string {
	slices.Sort(ps)
	return slices.Compact(ps)
}
