package gitops_test

import (
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/orbitrun/orbit/gitops"
)

// TestCommitDiff: the patch of a commit against its first parent, cut on a
// rune boundary at the bound; revisions that are not full ids are refused.
func TestCommitDiff(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.write("b.txt", "ünïcödé line\n")
	f.write("a.txt", "alpha\nbeta\n")
	f.git("add", "-A")
	f.git("commit", "--quiet", "-m", "second")
	sha := f.git("rev-parse", "HEAD")
	r := f.open()

	patch, cut, err := r.CommitDiff(f.ctx, sha, 1<<20)
	if err != nil || cut {
		t.Fatalf("CommitDiff: %v, cut %v", err, cut)
	}
	for _, want := range []string{"+++ b/b.txt", "+ünïcödé line", " alpha\n+beta", "2 files changed"} {
		if !strings.Contains(patch, want) {
			t.Errorf("patch lacks %q:\n%s", want, patch)
		}
	}
	at := strings.Index(patch, "ü") + 1 // inside the two bytes of ü
	short, cut, err := r.CommitDiff(f.ctx, sha, at)
	if err != nil || !cut || !utf8.ValidString(short) || len(short) >= at || !strings.HasPrefix(patch, short) {
		t.Errorf("cut at %d: %q, cut %v, err %v", at, short, cut, err)
	}

	for _, rev := range []string{"HEAD", "main", "--output=/tmp/x", sha[:12], strings.ToUpper(sha)} {
		if _, _, err := r.CommitDiff(f.ctx, rev, 100); !errors.Is(err, gitops.ErrInvalidArgument) {
			t.Errorf("CommitDiff(%q): %v, want ErrInvalidArgument", rev, err)
		}
	}
}
