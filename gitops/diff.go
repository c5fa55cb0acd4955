package gitops

import (
	"context"
	"fmt"
	"unicode/utf8"
)

// CommitDiff returns the patch a commit made against its first parent (or
// against nothing, for a root commit), cut to at most max bytes on a rune
// boundary; cut says whether it was. sha must be a full object id: it names
// what an event recorded, never a ref a caller typed.
func (r *Repo) CommitDiff(ctx context.Context, sha string, max int) (patch string, cut bool, err error) {
	if !isObjectID(sha) {
		return "", false, fmt.Errorf("%w: %q is not a full commit id", ErrInvalidArgument, sha)
	}
	out, err := r.run(ctx, call{
		args:     []string{"diff-tree", "-p", "--root", "--no-color", "--no-ext-diff", "--stat", "--no-commit-id", "-m", "--first-parent", sha},
		readOnly: true,
	})
	if err != nil {
		return "", false, fmt.Errorf("diff of %s: %w", sha, err)
	}
	if len(out) <= max {
		return string(out), false, nil
	}
	n := max
	for n > 0 && !utf8.RuneStart(out[n]) {
		n--
	}
	return string(out[:n]), true, nil
}
