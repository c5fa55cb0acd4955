package gitops

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Worktree is one work tree of a repository, as git worktree list shows
// it: the main one first, then the linked ones.
type Worktree struct {
	Path     string // absolute
	Head     string // the commit checked out ("" in a bare repository)
	Branch   string // the branch checked out, without refs/heads/ ("" when detached)
	Detached bool
	// Prunable: the work tree's directory is gone; git forgets it at the
	// next prune.
	Prunable bool
}

// Worktrees lists the repository's work trees.
func (r *Repo) Worktrees(ctx context.Context) ([]Worktree, error) {
	out, err := r.run(ctx, call{args: []string{"worktree", "list", "--porcelain", "-z"}, readOnly: true})
	if err != nil {
		return nil, fmt.Errorf("listing work trees: %w", err)
	}
	var list []Worktree
	var cur *Worktree
	for _, f := range strings.Split(string(out), "\x00") {
		switch {
		case f == "":
			cur = nil
		case strings.HasPrefix(f, "worktree "):
			list = append(list, Worktree{Path: filepath.Clean(strings.TrimPrefix(f, "worktree "))})
			cur = &list[len(list)-1]
		case cur == nil:
			return nil, fmt.Errorf("listing work trees: unexpected %q", f)
		case strings.HasPrefix(f, "HEAD "):
			cur.Head = strings.TrimPrefix(f, "HEAD ")
		case strings.HasPrefix(f, "branch "):
			cur.Branch = strings.TrimPrefix(strings.TrimPrefix(f, "branch "), "refs/heads/")
		case f == "detached":
			cur.Detached = true
		case f == "prunable" || strings.HasPrefix(f, "prunable "):
			cur.Prunable = true
		}
	}
	return list, nil
}

// checkoutOf returns the work tree that has branch checked out, if any.
func (r *Repo) checkoutOf(ctx context.Context, branch string) (*Worktree, error) {
	list, err := r.Worktrees(ctx)
	if err != nil {
		return nil, err
	}
	for i := range list {
		if list[i].Branch == branch && !list[i].Prunable {
			return &list[i], nil
		}
	}
	return nil, nil
}

// AddWorktree makes a linked work tree of the repository at path, on a new
// branch that starts at commit start, and returns it opened.
//
// It can be called again for the same path and branch, after a crash at
// any point or a redelivered request, and then finds what the first call
// made: the work tree on its branch, left as it is (its work is kept), or
// the branch alone, which it checks out at path. It refuses, changing
// nothing, a path that holds anything else (ErrWorktreeExists) and a
// branch that exists elsewhere or does not descend from start
// (ErrBranchExists).
func (r *Repo) AddWorktree(ctx context.Context, path, branch, start string) (*Repo, error) {
	if err := checkRefFormat("branch", branch); err != nil {
		return nil, err
	}
	if err := checkRev("start", start); err != nil {
		return nil, err
	}
	if !filepath.IsAbs(path) {
		return nil, fmt.Errorf("%w: work tree path %q is not absolute", ErrInvalidArgument, path)
	}
	path = filepath.Clean(path)
	if wt, err := r.checkoutOf(ctx, branch); err != nil {
		return nil, err
	} else if wt != nil {
		if !samePath(wt.Path, path) {
			return nil, fmt.Errorf("%w: %s is checked out in %s, not %s", ErrBranchExists, branch, wt.Path, path)
		}
		return r.openLinked(path)
	}
	if err := r.clearPath(path); err != nil {
		return nil, err
	}
	// A work tree whose directory was removed by hand is still registered:
	// forget it, or git refuses the path or the branch.
	if _, err := r.run(ctx, call{args: []string{"worktree", "prune"}}); err != nil {
		return nil, fmt.Errorf("pruning work trees: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, err
	}
	head, exists, err := r.branchHead(ctx, branch)
	if err != nil {
		return nil, err
	}
	args := []string{"worktree", "add", "--quiet", "-b", branch, "--", path, start}
	if exists {
		if ok, err := r.IsAncestor(ctx, start, head); err != nil {
			return nil, err
		} else if !ok {
			return nil, fmt.Errorf("%w: %s exists at %s, which does not descend from %s", ErrBranchExists, branch, head, start)
		}
		args = []string{"worktree", "add", "--quiet", "--", path, branch}
	}
	if _, err := r.run(ctx, call{args: args, uninterruptible: true}); err != nil {
		return nil, fmt.Errorf("adding the work tree %s: %w", path, err)
	}
	return r.openLinked(path)
}

// clearPath makes sure nothing stands at path: an empty directory (a work
// tree add cut short) is removed, anything else refused.
func (r *Repo) clearPath(path string) error {
	entries, err := os.ReadDir(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return fmt.Errorf("%w: %s: %v", ErrWorktreeExists, path, err)
	case len(entries) > 0:
		return fmt.Errorf("%w: %s is not empty and is not a work tree of %s; move it away", ErrWorktreeExists, path, r.Dir)
	}
	return os.Remove(path)
}

func (r *Repo) openLinked(path string) (*Repo, error) {
	wt, err := Open(path, WithEnv(r.env...))
	if err != nil {
		return nil, err
	}
	if !samePath(wt.Dir, path) {
		return nil, fmt.Errorf("%w: %s is inside the work tree %s", ErrWorktreeExists, path, wt.Dir)
	}
	return wt, nil
}

// RemoveWorktree removes the linked work tree at path, its directory and
// git's record of it; one that is already gone is removed. A work tree with
// changes to tracked files, or untracked files, is refused (ErrDirty)
// unless force. Its branch is kept.
func (r *Repo) RemoveWorktree(ctx context.Context, path string, force bool) error {
	path = filepath.Clean(path)
	if samePath(path, r.Dir) {
		return fmt.Errorf("%w: %s is the repository's main work tree", ErrInvalidArgument, path)
	}
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		if _, err := r.run(ctx, call{args: []string{"worktree", "prune"}}); err != nil {
			return fmt.Errorf("pruning work trees: %w", err)
		}
		return nil
	}
	if !force {
		wt, err := Open(path, WithEnv(r.env...))
		if err != nil {
			return err
		}
		dirty, untracked, err := wt.status(ctx)
		if err != nil {
			return err
		}
		if all := append(dirty, untracked...); len(all) > 0 {
			return fmt.Errorf("%w: %s has %d changed or untracked file(s): %s", ErrDirty, path, len(all), listPaths(all, 20))
		}
	}
	args := []string{"worktree", "remove", "--force", "--", path}
	if _, err := r.run(ctx, call{args: args, uninterruptible: true}); err != nil {
		return fmt.Errorf("removing the work tree %s: %w", path, err)
	}
	return nil
}

// samePath reports whether two absolute paths name the same directory,
// symbolic links resolved where they exist.
func samePath(a, b string) bool {
	if ra, err := filepath.EvalSymlinks(a); err == nil {
		a = ra
	}
	if rb, err := filepath.EvalSymlinks(b); err == nil {
		b = rb
	}
	return filepath.Clean(a) == filepath.Clean(b)
}

// AddDetached adds a linked work tree at path (absolute; nothing may stand
// there) with commit checked out on no branch: a throwaway copy of the
// repository at that commit, which RemoveWorktree takes away again. No
// branch or ref is made or moved.
func (r *Repo) AddDetached(ctx context.Context, path, commit string) (*Repo, error) {
	if err := checkRev("commit", commit); err != nil {
		return nil, err
	}
	if !filepath.IsAbs(path) {
		return nil, fmt.Errorf("%w: work tree path %q is not absolute", ErrInvalidArgument, path)
	}
	path = filepath.Clean(path)
	if err := r.clearPath(path); err != nil {
		return nil, err
	}
	if _, err := r.run(ctx, call{args: []string{"worktree", "add", "--quiet", "--detach", "--", path, commit}, uninterruptible: true}); err != nil {
		return nil, fmt.Errorf("adding the work tree %s at %s: %w", path, shortID(commit), err)
	}
	return r.openLinked(path)
}
