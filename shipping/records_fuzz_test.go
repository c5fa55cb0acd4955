package shipping

import (
	"path"
	"strings"
	"testing"
)

// FuzzContextFiles: whatever a person writes as a context file, what is
// recorded is a clean path or glob inside the repository, or refused.
func FuzzContextFiles(f *testing.F) {
	for _, seed := range []string{"greet.txt", "file:src/a.go", "dir:docs/", "./a//b", "../x", "/etc/passwd", "a/../../b", "dir:", "src/**", " \t", "a\x00b"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, in string) {
		out, err := contextFiles([]string{in})
		if err != nil {
			return
		}
		for _, p := range out {
			if p == "" || p == "." || path.IsAbs(p) || p == ".." || strings.HasPrefix(p, "../") || strings.ContainsRune(p, 0) || path.Clean(p) != p {
				t.Fatalf("contextFiles(%q) recorded %q", in, p)
			}
		}
	})
}
