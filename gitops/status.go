package gitops

import (
	"context"
	"fmt"
	"sort"
	"strings"
)

// workStatus is what one git status --porcelain=v2 --branch says of the
// work tree: where HEAD is, and every path that differs from HEAD, from the
// index or is untracked. One such call replaces the separate reads of
// HEAD, the branch, the staged and unstaged changes and the untracked files
// that an attempt's steps need.
type workStatus struct {
	branch   string // the branch HEAD is on, "" when detached
	detached bool
	head     string // the commit HEAD points at, "" when the branch has no commit
	entries  []statusEntry
}

// statusEntry is one path of a status: a tracked path with changes (kind
// '1', '2' or 'u'), or an untracked one ('?'). Ignored paths ('!') are not
// kept.
type statusEntry struct {
	kind byte
	x, y byte // the index and the work tree column, '.' when unchanged
	path string
}

// readStatus runs git status once. With untracked, untracked files are
// listed one by one (an embedded repository as its directory, with a
// trailing "/"), as git ls-files --others --exclude-standard lists them.
func (r *Repo) readStatus(ctx context.Context, untracked bool) (*workStatus, error) {
	mode := "--untracked-files=no"
	if untracked {
		mode = "--untracked-files=all"
	}
	out, err := r.run(ctx, call{
		args:     []string{"status", "--porcelain=v2", "--branch", "--no-ahead-behind", "-z", "--no-renames", mode},
		readOnly: true,
	})
	if err != nil {
		return nil, fmt.Errorf("reading the status of the work tree: %w", err)
	}
	st, err := parseStatus(out)
	if err != nil {
		return nil, fmt.Errorf("reading the status of the work tree: %w", err)
	}
	return st, nil
}

// parseStatus reads the NUL-separated output of
// git status --porcelain=v2 --branch -z.
func parseStatus(out []byte) (*workStatus, error) {
	st := &workStatus{}
	sawHead := false
	fields := strings.Split(string(out), "\x00")
	for i := 0; i < len(fields); i++ {
		rec := fields[i]
		if rec == "" {
			continue
		}
		if hdr, ok := strings.CutPrefix(rec, "# "); ok {
			key, val, _ := strings.Cut(hdr, " ")
			switch key {
			case "branch.oid":
				if val != "(initial)" {
					if !isObjectID(val) {
						return nil, fmt.Errorf("unexpected header %q", rec)
					}
					st.head = val
				}
			case "branch.head":
				sawHead = true
				if val == "(detached)" {
					st.detached = true
				} else if val == "" {
					return nil, fmt.Errorf("unexpected header %q", rec)
				} else {
					st.branch = val
				}
			}
			continue
		}
		// "1 XY sub mH mI mW hH hI path", "2 XY sub mH mI mW hH hI Xscore
		// path" then the original path as the next field, "u XY sub m1 m2
		// m3 mW h1 h2 h3 path", "? path", "! path".
		var n int
		switch rec[0] {
		case '1':
			n = 9
		case '2':
			n = 10
		case 'u':
			n = 11
		case '?', '!':
			n = 2
		default:
			return nil, fmt.Errorf("unexpected entry %q", rec)
		}
		f := strings.SplitN(rec, " ", n)
		if len(f) != n || len(f[0]) != 1 || f[n-1] == "" {
			return nil, fmt.Errorf("unexpected entry %q", rec)
		}
		e := statusEntry{kind: rec[0], path: f[n-1]}
		if n > 2 {
			if len(f[1]) != 2 {
				return nil, fmt.Errorf("unexpected entry %q", rec)
			}
			e.x, e.y = f[1][0], f[1][1]
		}
		if e.kind == '2' {
			i++ // the original path of a rename or copy
		}
		if e.kind != '!' {
			st.entries = append(st.entries, e)
		}
	}
	if !sawHead {
		return nil, fmt.Errorf("no branch header in %q", capStderr(string(out)))
	}
	return st, nil
}

// tracked returns the tracked paths with staged or unstaged changes, sorted.
func (st *workStatus) tracked() []string {
	var res []string
	for _, e := range st.entries {
		if e.kind != '?' {
			res = append(res, e.path)
		}
	}
	sort.Strings(res)
	return res
}

// untracked returns the untracked files, sorted.
func (st *workStatus) untracked() []string {
	var res []string
	for _, e := range st.entries {
		if e.kind == '?' {
			res = append(res, e.path)
		}
	}
	sort.Strings(res)
	return res
}

// addedToIndex returns the paths the index has and HEAD has not: added, or
// added with git add --intent-to-add.
func (st *workStatus) addedToIndex() []string {
	var res []string
	for _, e := range st.entries {
		if e.kind != '?' && (e.x == 'A' || e.y == 'A') {
			res = append(res, e.path)
		}
	}
	return res
}

// worktreeExact reports whether the tracked entries name exactly the paths
// whose work tree content differs from HEAD, as git diff HEAD would list
// them. It does not when a path changed both in the index and again in
// the work tree: the work tree may be back to HEAD's content.
func (st *workStatus) worktreeExact() bool {
	for _, e := range st.entries {
		if e.kind != '?' && e.x != '.' && e.y != '.' {
			return false
		}
	}
	return true
}

// branchRef is what for-each-ref says of a local branch.
type branchRef struct {
	sha     string
	tree    string
	parents []string
}

// readBranches reads local branches in one git for-each-ref; a branch that
// does not exist is absent from the result. Only exact names count:
// for-each-ref also matches the refs under a name, given as a prefix.
func (r *Repo) readBranches(ctx context.Context, names ...string) (map[string]branchRef, error) {
	args := []string{"for-each-ref", "--format=%(objectname)%00%(tree)%00%(parent)%00%(refname)"}
	want := map[string]string{}
	for _, b := range names {
		if err := checkBranchName("branch", b); err != nil {
			return nil, err
		}
		want["refs/heads/"+b] = b
		args = append(args, "refs/heads/"+b)
	}
	out, err := r.run(ctx, call{args: args, readOnly: true})
	if err != nil {
		return nil, fmt.Errorf("reading branch %s: %w", strings.Join(names, ", "), err)
	}
	res := map[string]branchRef{}
	for _, l := range lines(out) {
		f := strings.Split(l, "\x00")
		if len(f) != 4 {
			return nil, fmt.Errorf("reading branch %s: unexpected output %q", strings.Join(names, ", "), l)
		}
		b, ok := want[f[3]]
		if !ok {
			continue
		}
		if !isObjectID(f[0]) {
			return nil, fmt.Errorf("reading branch %s: unexpected output %q", b, l)
		}
		res[b] = branchRef{sha: f[0], tree: f[1], parents: strings.Fields(f[2])}
	}
	return res, nil
}
