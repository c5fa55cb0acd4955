package gitops

import (
	"context"
	"fmt"
	"strconv"
	"strings"
)

// Branches lists the local branches whose names start with prefix, with
// the commit each points at.
func (r *Repo) Branches(ctx context.Context, prefix string) (map[string]string, error) {
	out, err := r.run(ctx, call{
		args:     []string{"for-each-ref", "--format=%(objectname) %(refname)", "refs/heads/" + prefix},
		readOnly: true,
	})
	if err != nil {
		return nil, fmt.Errorf("listing branches: %w", err)
	}
	branches := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		sha, ref, ok := strings.Cut(line, " ")
		if !ok {
			continue
		}
		name := strings.TrimPrefix(ref, "refs/heads/")
		if strings.HasPrefix(name, prefix) {
			branches[name] = sha
		}
	}
	return branches, nil
}

// UnmergedCommits returns how many commits of branch no other ref reaches:
// no other local branch, remote-tracking branch, tag or other ref
// (refs/orbit/… included). A work tree's HEAD does not count: a work tree
// on the branch holds nothing but the branch. Zero means deleting the
// branch loses no commit. ErrBranchNotFound when there is no branch.
func (r *Repo) UnmergedCommits(ctx context.Context, branch string) (int, error) {
	if err := checkBranchName("branch", branch); err != nil {
		return 0, err
	}
	if _, err := r.BranchSHA(ctx, branch); err != nil {
		return 0, err
	}
	out, err := r.run(ctx, call{
		args:     []string{"rev-list", "--count", "refs/heads/" + branch, "--not", "--exclude=refs/heads/" + branch, "--glob=refs/*"},
		readOnly: true,
	})
	if err != nil {
		return 0, fmt.Errorf("counting the commits only %s has: %w", branch, err)
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(out)))
	if err != nil {
		return 0, fmt.Errorf("counting the commits only %s has: %q", branch, out)
	}
	return n, nil
}

// CheckedOut returns the path of the work tree that has branch checked
// out, and "" when none has.
func (r *Repo) CheckedOut(ctx context.Context, branch string) (string, error) {
	wt, err := r.checkoutOf(ctx, branch)
	if err != nil || wt == nil {
		return "", err
	}
	return wt.Path, nil
}

// DeleteBranch deletes branch if it still points at expect. A branch
// checked out in a work tree is refused (ErrBranchExists), one that has
// moved is kept (ErrBranchMoved), one already gone is no error. Nothing is
// changed when it fails.
func (r *Repo) DeleteBranch(ctx context.Context, branch, expect string) error {
	if err := checkBranchName("branch", branch); err != nil {
		return err
	}
	if !isObjectID(expect) {
		return fmt.Errorf("%w: expected commit %q is not a full object id", ErrInvalidArgument, expect)
	}
	sha, ok, err := r.branchHead(ctx, branch)
	if err != nil || !ok {
		return err
	}
	if sha != expect {
		return fmt.Errorf("%w: %s is at %s, not %s", ErrBranchMoved, branch, shortID(sha), shortID(expect))
	}
	if path, err := r.CheckedOut(ctx, branch); err != nil {
		return err
	} else if path != "" {
		return fmt.Errorf("%w: %s is checked out at %s", ErrBranchExists, branch, path)
	}
	if _, err := r.run(ctx, call{args: []string{"update-ref", "-d", "refs/heads/" + branch, expect}}); err != nil {
		if _, still, rerr := r.branchHead(ctx, branch); rerr == nil && still {
			return fmt.Errorf("%w: deleting %s: %v", ErrBranchMoved, branch, err)
		}
		return fmt.Errorf("deleting %s: %w", branch, err)
	}
	return nil
}
