package gitops

import (
	"os/exec"
	"strings"
	"testing"
)

// validRefName agrees with git check-ref-format on every name: it replaces
// a git process per branch name checked.
func FuzzValidRefNameMatchesGit(f *testing.F) {
	for _, s := range []string{
		"main", "feature/x", "groundhog/t1/day-1", "a..b", ".hidden", "x/.y", "x.lock", "x.lock/y",
		"x/", "/x", "x//y", "x.", "@", "a@{b", "a@b", "a b", "a~1", "a^", "a:b", "a?", "a*", "a[b",
		"a\\b", "a\x01b", "a\x7fb", "é/ß", "\xff\xfe", "-x", "x.lo", ".", "..", "a/./b", "a.lock.b",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		if strings.ContainsAny(name, "\x00\n") {
			return // never reaches git: checkBranchName refuses it
		}
		ref := "refs/heads/" + name
		err := exec.Command("git", "check-ref-format", ref).Run()
		gitOK := err == nil
		if _, isExit := err.(*exec.ExitError); err != nil && !isExit {
			t.Fatal(err)
		}
		if got := validRefName(ref); got != gitOK {
			t.Errorf("validRefName(%q) = %v, git check-ref-format says %v", ref, got, gitOK)
		}
	})
}
