package gitops

import (
	"slices"
	"strings"
	"testing"
)

const statusSample = "# branch.oid 0123456789abcdef0123456789abcdef01234567\x00# branch.head groundhog/t1/day-1\x00" +
	"1 .M N... 100644 100644 100644 0123456789abcdef0123456789abcdef01234567 0123456789abcdef0123456789abcdef01234567 a file.txt\x00" +
	"1 A. N... 000000 100644 100644 0000000000000000000000000000000000000000 0123456789abcdef0123456789abcdef01234567 new.txt\x00" +
	"1 .A N... 000000 000000 100644 0000000000000000000000000000000000000000 0000000000000000000000000000000000000000 intent.txt\x00" +
	"1 MM N... 100644 100644 100644 0123456789abcdef0123456789abcdef01234567 0123456789abcdef0123456789abcdef01234567 both.txt\x00" +
	"2 R. N... 100644 100644 100644 0123456789abcdef0123456789abcdef01234567 0123456789abcdef0123456789abcdef01234567 R100 moved.txt\x00orig.txt\x00" +
	"u UU N... 100644 100644 100644 100644 0123456789abcdef0123456789abcdef01234567 0123456789abcdef0123456789abcdef01234567 0123456789abcdef0123456789abcdef01234567 conflict.txt\x00" +
	"? notes.txt\x00? sub/\x00! debug.log\x00"

func TestParseStatus(t *testing.T) {
	st, err := parseStatus([]byte(statusSample))
	if err != nil {
		t.Fatal(err)
	}
	if st.branch != "groundhog/t1/day-1" || st.detached || st.head != "0123456789abcdef0123456789abcdef01234567" {
		t.Errorf("branch %q detached %v head %q", st.branch, st.detached, st.head)
	}
	if got, want := st.tracked(), []string{"a file.txt", "both.txt", "conflict.txt", "intent.txt", "moved.txt", "new.txt"}; !slices.Equal(got, want) {
		t.Errorf("tracked %q, want %q", got, want)
	}
	if got, want := st.untracked(), []string{"notes.txt", "sub/"}; !slices.Equal(got, want) {
		t.Errorf("untracked %q, want %q", got, want)
	}
	if got, want := st.addedToIndex(), []string{"new.txt", "intent.txt"}; !slices.Equal(got, want) {
		t.Errorf("added %q, want %q", got, want)
	}
	if st.worktreeExact() {
		t.Errorf("worktreeExact with both.txt changed in the index and the work tree")
	}

	st, err = parseStatus([]byte("# branch.oid (initial)\x00# branch.head (detached)\x00"))
	if err != nil || !st.detached || st.head != "" || len(st.entries) != 0 {
		t.Errorf("detached, no commit: %+v, %v", st, err)
	}
	for _, bad := range []string{"", "? x\x00", "# branch.head main\x00x y\x00", "# branch.head main\x001 .M\x00", "# branch.oid nothex\x00# branch.head main\x00"} {
		if _, err := parseStatus([]byte(bad)); err == nil {
			t.Errorf("parseStatus(%q) accepted", bad)
		}
	}
}

func FuzzParseStatus(f *testing.F) {
	f.Add([]byte(statusSample))
	f.Add([]byte("# branch.oid (initial)\x00# branch.head main\x00? a\x00"))
	f.Add([]byte("# branch.head (detached)\x002 R. N... 1 2 3 4 5 R100 b\x00"))
	f.Add([]byte("# branch.head main\x00u UU\x00"))
	f.Fuzz(func(t *testing.T, out []byte) {
		st, err := parseStatus(out)
		if err != nil {
			return
		}
		if st.detached == (st.branch != "") {
			t.Errorf("detached %v with branch %q", st.detached, st.branch)
		}
		if st.head != "" && !isObjectID(st.head) {
			t.Errorf("head %q", st.head)
		}
		for _, e := range st.entries {
			if e.path == "" || strings.ContainsRune(e.path, 0) || e.kind == '!' {
				t.Errorf("entry %+v", e)
			}
		}
	})
}
