package events_test

import (
	"strings"
	"testing"

	"github.com/orbitrun/orbit/events"
)

// FuzzParseSideEffect: a --side-effect value is refused, or read as a
// kind and a target that are both set and that put back together (with
// ":irreversible" when it is not reversible) give the value again.
func FuzzParseSideEffect(f *testing.F) {
	for _, seed := range []string{"file_write:a.txt", "db_mutation:users:irreversible", "other:a:b:c", ":x", "x:", "x", "git_commit::irreversible", "other:x:irreversible:irreversible"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, s string) {
		se, err := events.ParseSideEffect(s)
		if err != nil {
			return
		}
		if se.Kind == "" || se.Target == "" {
			t.Fatalf("%q: read as %+v", s, se)
		}
		back := se.Kind + ":" + se.Target
		if !se.Reversible {
			back += ":irreversible"
		}
		if back != s {
			t.Fatalf("%q: read as %+v, which gives back %q", s, se, back)
		}
		if strings.Contains(se.Kind, ":") {
			t.Fatalf("%q: kind %q holds a colon", s, se.Kind)
		}
	})
}
