package gitops_test

import (
	"os/exec"
	"testing"
)

// An attempt that rewrites .gitignore does not get the user's ignored
// files (nor its own, ignored by the snapshot's rules) into a commit.
func TestUnignoredFilesStayOut(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		op    string
		agent string // what the agent did with git after un-ignoring
	}{
		{"Rewind", ""}, {"CommitSuccess", ""},
		{"Rewind", "add"}, {"CommitSuccess", "add"},
		{"Rewind", "commit"}, {"CommitSuccess", "commit"},
	} {
		op := tt.op
		t.Run(op+"/"+tt.agent, func(t *testing.T) {
			t.Parallel()
			f, s := startAttempt(t)
			f.write("sub/.gitignore", "!keep.log\n")
			f.write("sub/keep.log", "ignored by the snapshot's rules\n")
			f.write(".gitignore", "# nothing ignored any more\n")
			switch tt.agent {
			case "add":
				f.git("add", "--all")
			case "commit":
				f.git("add", "--all")
				f.git("commit", "--quiet", "-m", "agent commits everything")
			}
			var err error
			if op == "Rewind" {
				_, err = f.repo.Rewind(f.ctx, s, "x")
			} else {
				var sha string
				sha, _, err = f.repo.CommitSuccess(f.ctx, s, "x", nil)
				if got := f.file(sha, ".gitignore"); got != "# nothing ignored any more\n" {
					t.Errorf("the .gitignore edit was not committed: %q", got)
				}
				if got := f.file(sha, "sub/.gitignore"); got != "!keep.log\n" {
					t.Errorf("a new file the snapshot's rules do not ignore was left out: %q", got)
				}
			}
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range []string{"debug.log", "build.log", "sub/keep.log"} {
				if tt.agent == "commit" {
					// The agent's own commit has them; the capture and the
					// task branch must not.
					if got := f.file(s.ScratchBranch, p); f.branchExists(s.ScratchBranch) && got != "<missing>" {
						t.Errorf("%s, ignored at the snapshot, is in the capture", p)
					}
					if got := f.file("main", p); got != "<missing>" {
						t.Errorf("%s, ignored at the snapshot, is on main", p)
					}
				} else if f.everCommitted(p) {
					t.Errorf("%s, ignored at the snapshot, is in a commit", p)
				}
			}
			if got := f.read("debug.log"); got != "ignored\n" {
				t.Errorf("debug.log = %q", got)
			}
			if got := f.read("sub/keep.log"); got != "ignored by the snapshot's rules\n" {
				t.Errorf("sub/keep.log = %q", got)
			}
		})
	}
}

// Names that look like options, globs or pathspec magic, or hold new
// lines, are only ever paths.
func TestOddFileNames(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	pre := []string{"-rf", "we*rd [1].txt", ":(top)x", "new\nline.txt", "ünï cødé.txt"}
	for _, p := range pre {
		f.write(p, "pre-existing "+p+"\n")
	}
	s := f.snapshot()
	if !sameStrings(s.Untracked, []string{"-rf", ":(top)x", "new\nline.txt", "we*rd [1].txt", "ünï cødé.txt"}) {
		t.Errorf("Untracked = %q", s.Untracked)
	}
	f.write("--help", "the attempt's\n")
	f.write("we*rd [2].txt", "the attempt's\n")
	f.write("a.txt", "edit\n")
	paths, err := f.repo.ChangedPaths(f.ctx, s)
	if err != nil || !sameStrings(paths, []string{"--help", "a.txt", "we*rd [2].txt"}) {
		t.Errorf("ChangedPaths = %q, %v", paths, err)
	}
	sha, _, err := f.repo.CommitSuccess(f.ctx, s, "odd names", nil)
	if err != nil {
		t.Fatal(err)
	}
	files := f.git("diff", "--name-only", "-z", s.SnapshotRef, sha)
	if files != "--help\x00a.txt\x00we*rd [2].txt\x00" {
		t.Errorf("committed %q", files)
	}
	for _, p := range pre {
		if got := f.read(p); got != "pre-existing "+p+"\n" {
			t.Errorf("%q = %q", p, got)
		}
	}
}

// An embedded repository that was there at the snapshot is an untracked
// entry like any other: never absorbed.
func TestEmbeddedRepository(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	cmd := exec.Command("git", "init", "--quiet", "nested")
	cmd.Dir = f.dir
	cmd.Env = append(processEnv(), testEnv()...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v %s", err, out)
	}
	f.write("nested/file.txt", "inside\n")
	s := f.snapshot()
	if !sameStrings(s.Untracked, []string{"nested/"}) {
		t.Fatalf("Untracked = %q", s.Untracked)
	}
	f.write("nested/more.txt", "more\n")
	f.write("a.txt", "edit\n")
	if _, err := f.repo.Rewind(f.ctx, s, "x"); err != nil {
		t.Fatal(err)
	}
	if f.everCommitted("nested") || f.everCommitted("nested/file.txt") {
		t.Errorf("the embedded repository is in a commit")
	}
	if f.read("nested/file.txt") != "inside\n" || f.read("nested/more.txt") != "more\n" {
		t.Errorf("the embedded repository was touched")
	}
}

// A file the snapshot's rules ignore, force-added by the attempt, is left
// out of the commit (and left in place).
func TestForceAddedIgnoredFileStaysOut(t *testing.T) {
	t.Parallel()
	f, s := startAttempt(t)
	f.git("add", "--force", "debug.log", "build.log")
	sha, _, err := f.repo.CommitSuccess(f.ctx, s, "done", testTrailers)
	if err != nil {
		t.Fatal(err)
	}
	checkCommitted(t, f, s, sha)
	if f.everCommitted("build.log") {
		t.Errorf("build.log is in a commit")
	}
	if f.read("build.log") != "the attempt's ignored output\n" {
		t.Errorf("build.log touched")
	}
}

// The attempt ignores a file that was untracked at the snapshot.
func TestPreexistingUntrackedIgnoredByAttempt(t *testing.T) {
	t.Parallel()
	f, s := startAttempt(t)
	f.write(".gitignore", "*.log\nnotes.txt\n")
	sha, _, err := f.repo.CommitSuccess(f.ctx, s, "ignore notes", nil)
	if err != nil {
		t.Fatal(err)
	}
	if f.everCommitted("notes.txt") || f.read("notes.txt") != "my notes\n" {
		t.Errorf("notes.txt committed or touched")
	}
	if got := f.file(sha, ".gitignore"); got != "*.log\nnotes.txt\n" {
		t.Errorf(".gitignore = %q", got)
	}
}
