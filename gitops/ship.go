package gitops

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Fetch fetches branch from remote into its remote-tracking ref
// (refs/remotes/<remote>/<branch>) and returns the commit it points at.
// Nothing else changes: no work tree, no local branch.
func (r *Repo) Fetch(ctx context.Context, remote, branch string) (string, error) {
	if err := checkRemote(remote); err != nil {
		return "", err
	}
	if err := checkRefFormat("branch", branch); err != nil {
		return "", err
	}
	tracking := "refs/remotes/" + remote + "/" + branch
	spec := "+refs/heads/" + branch + ":" + tracking
	if _, err := r.run(ctx, call{args: []string{"fetch", "--quiet", "--no-tags", "--no-write-fetch-head", "--", remote, spec}}); err != nil {
		return "", fmt.Errorf("fetching %s from %s: %w", branch, remote, err)
	}
	sha, ok, err := r.resolve(ctx, tracking)
	if err != nil {
		return "", err
	}
	if !ok {
		return "", fmt.Errorf("%w: %s has no branch %s", ErrBranchNotFound, remote, branch)
	}
	return sha, nil
}

// Resolve returns the commit a revision names (a branch, a ref, a commit
// id), and false when it names none.
func (r *Repo) Resolve(ctx context.Context, rev string) (string, bool, error) {
	if err := checkRev("revision", rev); err != nil {
		return "", false, err
	}
	return r.resolve(ctx, rev)
}

// HeadSHA returns the commit HEAD points at.
func (r *Repo) HeadSHA(ctx context.Context) (string, error) {
	return r.commitID(ctx, "HEAD")
}

// CommitAll commits every change of the work tree, tracked or untracked
// (ignored files excepted), on its branch with message, running the
// repository's hooks as the user's own commits do. When nothing changed
// it commits nothing and returns HEAD and false, so that a second call
// after a crash finds the first one's commit.
func (r *Repo) CommitAll(ctx context.Context, message string) (sha string, committed bool, err error) {
	if strings.TrimSpace(message) == "" {
		return "", false, fmt.Errorf("%w: empty commit message", ErrInvalidArgument)
	}
	if _, err := r.CurrentBranch(ctx); err != nil {
		return "", false, err
	}
	dirty, untracked, err := r.status(ctx)
	if err != nil {
		return "", false, err
	}
	if len(dirty) == 0 && len(untracked) == 0 {
		sha, err := r.HeadSHA(ctx)
		return sha, false, err
	}
	if _, err := r.run(ctx, call{args: []string{"add", "--all", "--", ":/"}, uninterruptible: true}); err != nil {
		return "", false, fmt.Errorf("staging the changes: %w", err)
	}
	ident, err := r.identityEnv(ctx)
	if err != nil {
		return "", false, err
	}
	if _, err := r.run(ctx, call{args: []string{"commit", "--quiet", "--file=-"}, stdin: []byte(message), env: ident,
		hooks: true, uninterruptible: true}); err != nil {
		return "", false, fmt.Errorf("committing: %w", err)
	}
	sha, err = r.HeadSHA(ctx)
	return sha, err == nil, err
}

// Rebase rebases the branch checked out onto commit onto, which must be
// clean of changes to tracked files (ErrDirty). A branch that already
// descends from onto is left as it is. A rebase that stops on a conflict
// is aborted, the work tree and branch as they were, and the error
// (ErrConflict) names the conflicting files.
func (r *Repo) Rebase(ctx context.Context, onto string) (string, error) {
	if err := checkRev("onto", onto); err != nil {
		return "", err
	}
	branch, err := r.CurrentBranch(ctx)
	if err != nil {
		return "", err
	}
	head, err := r.HeadSHA(ctx)
	if err != nil {
		return "", err
	}
	if ok, err := r.IsAncestor(ctx, onto, head); err != nil || ok {
		return head, err
	}
	if dirty, err := r.DirtyTracked(ctx); err != nil {
		return "", err
	} else if len(dirty) > 0 {
		return "", fmt.Errorf("%w: %s has uncommitted changes to %s", ErrDirty, r.Dir, listPaths(dirty, 20))
	}
	ident, err := r.identityEnv(ctx)
	if err != nil {
		return "", err
	}
	_, rerr := r.run(ctx, call{args: []string{"rebase", "--quiet", "--no-autostash", onto}, env: ident, uninterruptible: true})
	if rerr == nil {
		return r.HeadSHA(ctx)
	}
	out, err := r.run(ctx, call{args: []string{"diff", "--name-only", "-z", "--diff-filter=U"}, readOnly: true})
	conflicted := nulFields(out)
	if _, aerr := r.run(ctx, call{args: []string{"rebase", "--abort"}, uninterruptible: true}); aerr != nil {
		return "", errors.Join(fmt.Errorf("rebasing %s onto %s: %w", branch, onto, rerr), fmt.Errorf("aborting the rebase: %w", aerr))
	}
	if err != nil || len(conflicted) == 0 {
		return "", fmt.Errorf("rebasing %s onto %s: %w", branch, onto, rerr)
	}
	return "", fmt.Errorf("%w: rebasing %s onto %s stopped on %d file(s): %s; the rebase was aborted",
		ErrConflict, branch, shortID(onto), len(conflicted), listPaths(conflicted, 20))
}

// MergeFastForward moves branch forward to commit to, which must descend
// from it (ErrNotFastForward otherwise), and returns where the branch
// was. With expect set, the branch must be at expect (ErrBranchMoved,
// naming both, otherwise). A branch that already contains to is left as
// it is.
//
// IMPORTANT: a branch checked out in one of the repository's work trees
// moves with that work tree, which must have no change to tracked files
// (ErrDirty, naming the work tree and the files), and is moved by git's
// own fast-forward merge, which never overwrites a change it finds:
// nobody's uncommitted work is touched. A branch checked out nowhere is
// moved by compare-and-set.
func (r *Repo) MergeFastForward(ctx context.Context, branch, to, expect string) (string, error) {
	if err := checkRefFormat("branch", branch); err != nil {
		return "", err
	}
	if err := checkRev("to", to); err != nil {
		return "", err
	}
	cur, err := r.BranchSHA(ctx, branch)
	if err != nil {
		return "", err
	}
	if expect != "" && cur != expect {
		return "", fmt.Errorf("%w: %s is at %s, not at %s where it was expected", ErrBranchMoved, branch, shortID(cur), shortID(expect))
	}
	if done, err := r.IsAncestor(ctx, to, cur); err != nil || done {
		return cur, err
	}
	if ok, err := r.IsAncestor(ctx, cur, to); err != nil {
		return "", err
	} else if !ok {
		return "", fmt.Errorf("%w: %s is at %s, which %s does not descend from", ErrNotFastForward, branch, shortID(cur), shortID(to))
	}
	wt, err := r.checkoutOf(ctx, branch)
	if err != nil {
		return "", err
	}
	if wt == nil {
		return cur, r.SetRef(ctx, "refs/heads/"+branch, to, cur)
	}
	holder, err := Open(wt.Path, WithEnv(r.env...))
	if err != nil {
		return "", err
	}
	if dirty, err := holder.DirtyTracked(ctx); err != nil {
		return "", err
	} else if len(dirty) > 0 {
		return "", fmt.Errorf("%w: %s, where %s is checked out, has uncommitted changes to %s; commit or stash them, and nothing of them is touched",
			ErrDirty, holder.Dir, branch, listPaths(dirty, 20))
	}
	if _, err := holder.run(ctx, call{args: []string{"merge", "--quiet", "--ff-only", "--no-edit", to}, uninterruptible: true}); err != nil {
		return "", fmt.Errorf("fast-forwarding %s in %s to %s: %w", branch, holder.Dir, shortID(to), err)
	}
	return cur, nil
}

// RemoteBranch returns the commit branch points at on remote, and false
// when remote has no such branch. It asks the remote; nothing is fetched.
func (r *Repo) RemoteBranch(ctx context.Context, remote, branch string) (string, bool, error) {
	if err := checkRemote(remote); err != nil {
		return "", false, err
	}
	if err := checkRefFormat("branch", branch); err != nil {
		return "", false, err
	}
	out, err := r.run(ctx, call{args: []string{"ls-remote", "--heads", "--", remote, "refs/heads/" + branch}, readOnly: true})
	if err != nil {
		return "", false, fmt.Errorf("asking %s for %s: %w", remote, branch, err)
	}
	for _, l := range lines(out) {
		if sha, ref, ok := strings.Cut(l, "\t"); ok && ref == "refs/heads/"+branch {
			return sha, true, nil
		}
	}
	return "", false, nil
}

// PushLease pushes commit sha to branch on remote if, and only if, the
// remote branch is at expect (empty: does not exist), with git's exact
// lease (--force-with-lease=refs/heads/<branch>:<expect>). A remote branch
// that moved is ErrBranchMoved, naming where it is: nothing was pushed.
func (r *Repo) PushLease(ctx context.Context, remote, sha, branch, expect string) error {
	if err := checkRemote(remote); err != nil {
		return err
	}
	if err := checkRefFormat("branch", branch); err != nil {
		return err
	}
	if err := checkRev("commit", sha); err != nil {
		return err
	}
	if expect != "" && !isObjectID(expect) {
		return fmt.Errorf("%w: lease %q is not a commit id", ErrInvalidArgument, expect)
	}
	ref := "refs/heads/" + branch
	_, err := r.run(ctx, call{args: []string{"push", "--quiet", "--porcelain", "--force-with-lease=" + ref + ":" + expect, "--", remote, sha + ":" + ref}})
	if err == nil {
		return nil
	}
	now, exists, qerr := r.RemoteBranch(ctx, remote, branch)
	if qerr == nil && now != expect && (exists || expect != "") {
		if !exists {
			now = "nothing (no such branch)"
		} else {
			now = shortID(now)
		}
		want := "not to exist"
		if expect != "" {
			want = "at " + shortID(expect)
		}
		return fmt.Errorf("%w: %s on %s is at %s; the push expected it %s", ErrBranchMoved, branch, remote, now, want)
	}
	return fmt.Errorf("pushing %s to %s on %s: %w", shortID(sha), branch, remote, err)
}

// ChangedFiles returns the files that differ between two commits, sorted.
func (r *Repo) ChangedFiles(ctx context.Context, from, to string) ([]string, error) {
	if err := checkRev("from", from); err != nil {
		return nil, err
	}
	if err := checkRev("to", to); err != nil {
		return nil, err
	}
	out, err := r.run(ctx, call{args: []string{"diff", "--name-only", "-z", "--no-renames", from, to}, readOnly: true})
	if err != nil {
		return nil, fmt.Errorf("comparing %s and %s: %w", from, to, err)
	}
	return nulFields(out), nil
}

// checkRemote refuses a remote name git could read as an option or a URL
// that runs something.
func checkRemote(remote string) error {
	if remote == "" || strings.HasPrefix(remote, "-") || strings.ContainsAny(remote, "\x00\n\r:/ ") {
		return fmt.Errorf("%w: %q is not a remote name", ErrInvalidArgument, remote)
	}
	return nil
}

// shortID is a commit id cut to twelve characters, for messages.
func shortID(sha string) string {
	if isObjectID(sha) {
		return sha[:12]
	}
	return sha
}

// Changes returns the files of the work tree that differ from HEAD:
// tracked files with staged or unstaged changes and untracked files,
// sorted (ignored files are not reported).
func (r *Repo) Changes(ctx context.Context) ([]string, error) {
	dirty, untracked, err := r.status(ctx)
	if err != nil {
		return nil, err
	}
	all := append(dirty, untracked...)
	slices.Sort(all)
	return all, nil
}

// RemoteURL returns the URL remote is fetched from.
func (r *Repo) RemoteURL(ctx context.Context, remote string) (string, error) {
	if err := checkRemote(remote); err != nil {
		return "", err
	}
	out, err := r.run(ctx, call{args: []string{"remote", "get-url", "--", remote}, readOnly: true})
	if err != nil {
		return "", fmt.Errorf("the URL of %s: %w", remote, err)
	}
	return strings.TrimSpace(string(out)), nil
}

// MergeBase returns the best common ancestor of two commits.
func (r *Repo) MergeBase(ctx context.Context, a, b string) (string, error) {
	if err := checkRev("a", a); err != nil {
		return "", err
	}
	if err := checkRev("b", b); err != nil {
		return "", err
	}
	out, err := r.run(ctx, call{args: []string{"merge-base", a, b}, readOnly: true})
	if err != nil {
		return "", fmt.Errorf("the merge base of %s and %s: %w", shortID(a), shortID(b), err)
	}
	return strings.TrimSpace(string(out)), nil
}

// CountBetween returns how many commits to has that from lacks.
func (r *Repo) CountBetween(ctx context.Context, from, to string) (int, error) {
	if err := checkRev("from", from); err != nil {
		return 0, err
	}
	if err := checkRev("to", to); err != nil {
		return 0, err
	}
	out, err := r.run(ctx, call{args: []string{"rev-list", "--count", from + ".." + to}, readOnly: true})
	if err != nil {
		return 0, fmt.Errorf("counting the commits of %s..%s: %w", shortID(from), shortID(to), err)
	}
	return strconv.Atoi(strings.TrimSpace(string(out)))
}
