package gitops

import (
	"bytes"
	"context"
	"fmt"
	"sort"
	"strings"
)

// CurrentBranch returns the branch HEAD is on (without refs/heads/), also
// when it has no commit yet. It fails with ErrDetachedHead when HEAD does
// not name a branch.
func (r *Repo) CurrentBranch(ctx context.Context) (string, error) {
	out, err := r.run(ctx, call{args: []string{"symbolic-ref", "--quiet", "HEAD"}, readOnly: true})
	if exitCode(err) == 1 {
		return "", fmt.Errorf("%w (in %s)", ErrDetachedHead, r.Dir)
	}
	if err != nil {
		return "", fmt.Errorf("reading HEAD: %w", err)
	}
	ref := strings.TrimSpace(string(out))
	branch, ok := strings.CutPrefix(ref, "refs/heads/")
	if !ok || branch == "" {
		return "", fmt.Errorf("%w: HEAD points at %s (in %s)", ErrDetachedHead, ref, r.Dir)
	}
	return branch, nil
}

// BranchSHA returns the commit a local branch points at. It fails with
// ErrBranchNotFound when there is no such branch.
func (r *Repo) BranchSHA(ctx context.Context, branch string) (string, error) {
	sha, ok, err := r.branchHead(ctx, branch)
	if err != nil {
		return "", err
	}
	if !ok {
		return "", fmt.Errorf("%w: %s", ErrBranchNotFound, branch)
	}
	return sha, nil
}

// branchHead returns the commit a local branch points at, and false when
// there is no such branch.
func (r *Repo) branchHead(ctx context.Context, branch string) (string, bool, error) {
	refs, err := r.readBranches(ctx, branch)
	if err != nil {
		return "", false, err
	}
	ref, ok := refs[branch]
	return ref.sha, ok, nil
}

// resolve returns the full id of the commit rev names, and false when it
// names none.
func (r *Repo) resolve(ctx context.Context, rev string) (string, bool, error) {
	out, err := r.run(ctx, call{
		args:     []string{"rev-parse", "--verify", "--quiet", rev + "^{commit}"},
		readOnly: true,
	})
	if exitCode(err) == 1 {
		return "", false, nil
	}
	if err != nil {
		return "", false, fmt.Errorf("resolving %s: %w", rev, err)
	}
	sha := strings.TrimSpace(string(out))
	if !isObjectID(sha) {
		return "", false, fmt.Errorf("resolving %s: unexpected output %q", rev, sha)
	}
	return sha, true, nil
}

// CommitExists reports whether sha (or any revision) names a commit that is
// present in the repository.
func (r *Repo) CommitExists(ctx context.Context, sha string) (bool, error) {
	if err := checkRev("commit", sha); err != nil {
		return false, err
	}
	_, ok, err := r.resolve(ctx, sha)
	return ok, err
}

// IsAncestor reports whether ancestor is reachable from descendant (a
// commit is its own ancestor).
func (r *Repo) IsAncestor(ctx context.Context, ancestor, descendant string) (bool, error) {
	if err := checkRev("ancestor", ancestor); err != nil {
		return false, err
	}
	if err := checkRev("descendant", descendant); err != nil {
		return false, err
	}
	_, err := r.run(ctx, call{
		args:     []string{"merge-base", "--is-ancestor", ancestor, descendant},
		readOnly: true,
	})
	switch exitCode(err) {
	case 0:
		return true, nil
	case 1:
		return false, nil
	}
	return false, fmt.Errorf("is %s an ancestor of %s: %w", ancestor, descendant, err)
}

// FirstParent returns the first parent of a commit, or "" for a root
// commit.
func (r *Repo) FirstParent(ctx context.Context, sha string) (string, error) {
	id, err := r.commitID(ctx, sha)
	if err != nil {
		return "", err
	}
	out, err := r.run(ctx, call{args: []string{"rev-list", "--parents", "-n", "1", id}, readOnly: true})
	if err != nil {
		return "", fmt.Errorf("reading the parents of %s: %w", sha, err)
	}
	f := strings.Fields(string(out))
	if len(f) < 2 {
		return "", nil
	}
	return f[1], nil
}

// commitID resolves rev to the full id of an existing commit.
func (r *Repo) commitID(ctx context.Context, rev string) (string, error) {
	if err := checkRev("commit", rev); err != nil {
		return "", err
	}
	id, ok, err := r.resolve(ctx, rev)
	if err != nil {
		return "", err
	}
	if !ok {
		return "", fmt.Errorf("%w: no commit %s", ErrInvalidArgument, rev)
	}
	return id, nil
}

// Trailers returns the trailers of a commit's message, as
// git interpret-trailers --parse reads them (continuation lines unfolded; a
// "---" line does not end the message). When a key appears more than once
// the last value wins.
func (r *Repo) Trailers(ctx context.Context, sha string) (map[string]string, error) {
	id, err := r.commitID(ctx, sha)
	if err != nil {
		return nil, err
	}
	raw, err := r.run(ctx, call{args: []string{"cat-file", "commit", id}, readOnly: true})
	if err != nil {
		return nil, fmt.Errorf("reading commit %s: %w", sha, err)
	}
	// The message follows the header lines and one blank line.
	_, msg, _ := bytes.Cut(raw, []byte("\n\n"))
	out, err := r.run(ctx, call{
		args:     []string{"interpret-trailers", "--parse", "--no-divider"},
		stdin:    msg,
		readOnly: true,
	})
	if err != nil {
		return nil, fmt.Errorf("reading the trailers of %s: %w", sha, err)
	}
	res := map[string]string{}
	for _, l := range lines(out) {
		if k, v, ok := strings.Cut(l, ":"); ok {
			res[strings.TrimSpace(k)] = strings.TrimSpace(v)
		}
	}
	return res, nil
}

// ChangedPaths returns the paths that differ from the snapshot: tracked
// paths added, modified or deleted since s.SnapshotRef (a rename is its two
// paths), whether committed on the scratch branch, staged or only in the
// work tree; and untracked files that are not in s.Untracked (nor under an
// untracked directory recorded there). Ignored files are not reported, nor
// changes to the pre-existing untracked files (git has no copy of them to
// compare with). Paths are relative to the top level, slash-separated,
// sorted and unique.
func (r *Repo) ChangedPaths(ctx context.Context, s *Snapshot) ([]string, error) {
	if s == nil || !isObjectID(s.SnapshotRef) {
		return nil, fmt.Errorf("%w: snapshot without a snapshot ref", ErrInvalidArgument)
	}
	// One status tells, when HEAD is at the snapshot and no path changed
	// both in the index and again in the work tree.
	st, err := r.readStatus(ctx, true)
	if err != nil {
		return nil, err
	}
	if st.head == s.SnapshotRef && st.worktreeExact() {
		return uniqueSorted(append(st.tracked(), notCovered(s.Untracked, st.untracked())...)), nil
	}
	tracked, err := r.diffNames(ctx, s.SnapshotRef, false, "")
	if err != nil {
		return nil, err
	}
	untracked, err := r.newUntracked(ctx, s)
	if err != nil {
		return nil, err
	}
	return uniqueSorted(append(tracked, untracked...)), nil
}

// diffNames returns the paths whose content in the work tree (or, with
// cached, in the index) differs from rev, narrowed by filter (letters of
// git's --diff-filter, or "" for all). External diff and textconv programs
// a repository configures are never run.
func (r *Repo) diffNames(ctx context.Context, rev string, cached bool, filter string) ([]string, error) {
	args := []string{"diff", "--name-only", "-z", "--no-renames", "--no-ext-diff", "--no-textconv"}
	what := "the work tree"
	if cached {
		args, what = append(args, "--cached"), "the index"
	}
	if filter != "" {
		args = append(args, "--diff-filter="+filter)
	}
	out, err := r.run(ctx, call{args: append(args, rev, "--"), readOnly: true})
	if err != nil {
		return nil, fmt.Errorf("comparing %s with %s: %w", what, rev, err)
	}
	return nulFields(out), nil
}

// newUntracked returns the untracked, not ignored files that are not
// covered by s.Untracked.
func (r *Repo) newUntracked(ctx context.Context, s *Snapshot) ([]string, error) {
	out, err := r.run(ctx, call{
		args:     []string{"ls-files", "-z", "--others", "--exclude-standard"},
		readOnly: true,
	})
	if err != nil {
		return nil, fmt.Errorf("listing untracked files: %w", err)
	}
	return notCovered(s.Untracked, nulFields(out)), nil
}

// notCovered returns the paths that the untracked paths of a snapshot do
// not cover.
func notCovered(untracked, paths []string) []string {
	pre := newPreexisting(untracked)
	var res []string
	for _, p := range paths {
		if !pre.covers(p) {
			res = append(res, p)
		}
	}
	return res
}

// preexisting is the set of untracked paths of a snapshot. An entry ending
// in "/" (an embedded repository, which git lists as a directory) covers
// everything under it.
type preexisting map[string]bool

func newPreexisting(paths []string) preexisting {
	pre := preexisting{}
	for _, p := range paths {
		pre[p] = true
	}
	return pre
}

func (pre preexisting) covers(p string) bool {
	if pre[p] {
		return true
	}
	for i := 0; i < len(p); i++ {
		if p[i] == '/' && pre[p[:i+1]] {
			return true
		}
	}
	return false
}

// DirtyTracked returns the tracked files with staged or unstaged changes
// (added, modified, deleted, unmerged), sorted, slash-separated, relative
// to the top level. Untracked and ignored files are not reported.
func (r *Repo) DirtyTracked(ctx context.Context) ([]string, error) {
	dirty, _, err := r.status(ctx)
	return dirty, err
}

// status returns the tracked paths with staged or unstaged changes, and the
// untracked (not ignored) files, one by one.
func (r *Repo) status(ctx context.Context) (dirty, untracked []string, err error) {
	out, err := r.run(ctx, call{
		args:     []string{"status", "--porcelain=v1", "-z", "--untracked-files=all", "--no-renames"},
		readOnly: true,
	})
	if err != nil {
		return nil, nil, fmt.Errorf("reading the status of the work tree: %w", err)
	}
	for _, e := range nulFields(out) {
		if len(e) < 4 || e[2] != ' ' {
			return nil, nil, fmt.Errorf("reading the status of the work tree: unexpected entry %q", e)
		}
		xy, p := e[:2], e[3:]
		switch xy {
		case "??":
			untracked = append(untracked, p)
		case "!!":
		default:
			dirty = append(dirty, p)
		}
	}
	sort.Strings(dirty)
	sort.Strings(untracked)
	return dirty, untracked, nil
}

// checkRefFormat checks that name is a valid branch name, by the rules of
// git check-ref-format (see validRefName).
func checkRefFormat(what, name string) error {
	if err := checkBranchName(what, name); err != nil {
		return err
	}
	if !validRefName("refs/heads/" + name) {
		return fmt.Errorf("%w: %s %q is not a valid branch name", ErrInvalidArgument, what, name)
	}
	return nil
}

// listPaths formats at most max paths for an error message.
func listPaths(paths []string, max int) string {
	if len(paths) <= max {
		return strings.Join(paths, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(paths[:max], ", "), len(paths)-max)
}

// PatchID returns the stable patch id of a commit's change against its
// first parent: the same for a commit and its copy made by a rebase that
// met no conflict.
func (r *Repo) PatchID(ctx context.Context, sha string) (string, error) {
	if err := checkRev("commit", sha); err != nil {
		return "", err
	}
	diff, err := r.run(ctx, call{args: []string{"diff-tree", "--patch", "--root", "--no-color", sha}, readOnly: true})
	if err != nil {
		return "", fmt.Errorf("the change of %s: %w", shortID(sha), err)
	}
	out, err := r.run(ctx, call{args: []string{"patch-id", "--stable"}, stdin: diff, readOnly: true})
	if err != nil {
		return "", fmt.Errorf("the patch id of %s: %w", shortID(sha), err)
	}
	id, _, _ := strings.Cut(strings.TrimSpace(string(out)), " ")
	return id, nil
}

// CommitsWithTrailer returns the commits reachable from rev whose message
// has the trailer "key: value", newest first.
func (r *Repo) CommitsWithTrailer(ctx context.Context, rev, key, value string) ([]string, error) {
	if err := checkRev("rev", rev); err != nil {
		return nil, err
	}
	out, err := r.run(ctx, call{args: []string{"log", "--format=%H", "--fixed-strings", "--grep=" + key + ": " + value, rev, "--"}, readOnly: true})
	if err != nil {
		return nil, fmt.Errorf("searching %s for %s: %s: %w", rev, key, value, err)
	}
	var found []string
	for _, sha := range lines(out) {
		tr, err := r.Trailers(ctx, sha)
		if err != nil {
			return nil, err
		}
		if tr[key] == value {
			found = append(found, sha)
		}
	}
	return found, nil
}
