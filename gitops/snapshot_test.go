package gitops_test

import (
	"fmt"
	"os/exec"
	"strings"
	"testing"

	"github.com/orbitrun/orbit/gitops"
)

func TestCreateSnapshot(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	main := f.sha("main")
	f.write("notes.txt", "my notes\n")
	f.write("scratchpad/todo.md", "todo\n")
	f.write("debug.log", "ignored\n")

	s := f.snapshot()

	want := gitops.Snapshot{
		Task: "t1", Day: 1, TaskBranch: "main",
		ScratchBranch: "groundhog/t1/day-1",
		SnapshotRef:   main,
		Untracked:     []string{"notes.txt", "scratchpad/todo.md"},
	}
	if fmt.Sprint(*s) != fmt.Sprint(want) {
		t.Errorf("snapshot = %+v, want %+v", *s, want)
	}
	if b := f.branch(); b != "groundhog/t1/day-1" {
		t.Errorf("HEAD on %s, want the scratch branch", b)
	}
	if got := f.sha("groundhog/t1/day-1"); got != main {
		t.Errorf("scratch branch at %s, want %s", got, main)
	}
	if got := f.sha("main"); got != main {
		t.Errorf("main moved to %s", got)
	}
	for p, c := range map[string]string{"notes.txt": "my notes\n", "scratchpad/todo.md": "todo\n", "debug.log": "ignored\n"} {
		if got := f.read(p); got != c {
			t.Errorf("%s = %q, want %q", p, got, c)
		}
	}
}

func TestCreateSnapshotRefuses(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		setup    func(f *fixture)
		task     string
		day      int
		branch   string
		want     error
		contains []string
	}{
		{
			name:  "detached HEAD",
			setup: func(f *fixture) { f.git("switch", "--quiet", "--detach", "HEAD~1") },
			want:  gitops.ErrDetachedHead,
		},
		{
			name:     "staged change",
			setup:    func(f *fixture) { f.write("a.txt", "changed\n"); f.git("add", "a.txt") },
			want:     gitops.ErrDirty,
			contains: []string{"a.txt"},
		},
		{
			name:     "unstaged change",
			setup:    func(f *fixture) { f.write("dir/d.txt", "changed\n") },
			want:     gitops.ErrDirty,
			contains: []string{"dir/d.txt"},
		},
		{
			name:     "unstaged deletion",
			setup:    func(f *fixture) { f.remove("b.txt") },
			want:     gitops.ErrDirty,
			contains: []string{"b.txt"},
		},
		{
			name:     "staged new file",
			setup:    func(f *fixture) { f.write("new.txt", "x\n"); f.git("add", "new.txt") },
			want:     gitops.ErrDirty,
			contains: []string{"new.txt"},
		},
		{
			name: "merge in progress",
			setup: func(f *fixture) {
				f.git("switch", "--quiet", "-c", "side", "HEAD~1")
				f.write("c.txt", "side\n")
				f.git("add", "c.txt")
				f.git("commit", "--quiet", "-m", "side")
				f.git("switch", "--quiet", "main")
				f.gitCode("merge", "--quiet", "side") // conflicts
			},
			want: gitops.ErrDirty,
		},
		{
			name:     "another branch",
			setup:    func(f *fixture) { f.git("switch", "--quiet", "-c", "feature") },
			want:     gitops.ErrUnexpectedBranch,
			contains: []string{"main", "feature"},
		},
		{
			name:     "colliding scratch branch",
			setup:    func(f *fixture) { f.git("branch", "groundhog/t1/day-1", "HEAD~1") },
			want:     gitops.ErrScratchExists,
			contains: []string{"groundhog/t1/day-1"},
		},
		{name: "day 0", day: 0, want: gitops.ErrInvalidArgument},
		{name: "empty task", task: "", want: gitops.ErrInvalidArgument},
		{name: "task of dots", task: "..", want: gitops.ErrInvalidArgument},
		{name: "bad task branch", branch: "a..b", want: gitops.ErrInvalidArgument},
		{name: "task branch like an option", branch: "-f", want: gitops.ErrInvalidArgument},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			f.write("notes.txt", "untracked\n")
			if tt.setup != nil {
				tt.setup(f)
			}
			task, day, branch := "t1", 1, "main"
			if tt.task != "" || strings.HasPrefix(tt.name, "empty") {
				task = tt.task
			}
			if tt.day != 0 || strings.HasPrefix(tt.name, "day") {
				day = tt.day
			}
			if tt.branch != "" {
				branch = tt.branch
			}
			head, _ := f.gitCode("rev-parse", "HEAD")
			ref, _ := f.gitCode("symbolic-ref", "-q", "HEAD")
			status, branches := f.status(), f.branches()

			_, err := f.repo.CreateSnapshot(f.ctx, task, day, branch)
			msg := wantErr(t, err, tt.want)
			mustContain(t, msg, tt.contains...)

			// Nothing was touched.
			if h, _ := f.gitCode("rev-parse", "HEAD"); h != head {
				t.Errorf("HEAD moved from %s to %s", head, h)
			}
			if r, _ := f.gitCode("symbolic-ref", "-q", "HEAD"); r != ref {
				t.Errorf("HEAD switched from %q to %q", ref, r)
			}
			if got := f.status(); got != status {
				t.Errorf("status changed:\n%s\nwant:\n%s", got, status)
			}
			if got := f.branches(); !sameStrings(got, branches) {
				t.Errorf("branches = %v, want %v", got, branches)
			}
		})
	}
}

func TestCreateSnapshotCollisionKeepsBranch(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.git("branch", "groundhog/t1/day-1", "HEAD~1")
	old := f.sha("groundhog/t1/day-1")
	_, err := f.repo.CreateSnapshot(f.ctx, "t1", 1, "main")
	wantErr(t, err, gitops.ErrScratchExists)
	if got := f.sha("groundhog/t1/day-1"); got != old {
		t.Errorf("existing branch moved from %s to %s", old, got)
	}
	// The next day is free.
	s, err := f.repo.CreateSnapshot(f.ctx, "t1", 2, "main")
	if err != nil {
		t.Fatal(err)
	}
	if s.ScratchBranch != "groundhog/t1/day-2" {
		t.Errorf("scratch branch %s", s.ScratchBranch)
	}
}

func TestErrDirtyListsAtMostTwenty(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	for i := range 30 {
		f.write(fmt.Sprintf("many/f%02d.txt", i), "x\n")
	}
	f.git("add", "--all")
	f.git("commit", "--quiet", "-m", "many")
	for i := range 30 {
		f.write(fmt.Sprintf("many/f%02d.txt", i), "y\n")
	}
	_, err := f.repo.CreateSnapshot(f.ctx, "t1", 1, "main")
	msg := wantErr(t, err, gitops.ErrDirty)
	mustContain(t, msg, "30 tracked file(s)", "many/f00.txt", "many/f19.txt", "and 10 more")
	if strings.Contains(msg, "many/f20.txt") {
		t.Errorf("message lists more than 20 files: %s", msg)
	}
}

func TestScratchBranchName(t *testing.T) {
	t.Parallel()
	tests := []struct {
		task string
		want string
	}{
		{"t1", "groundhog/t1/day-3"},
		{"TASK-42_ok.v2", "groundhog/TASK-42_ok.v2/day-3"},
		{"feat: add x", "groundhog/feat--add-x/day-3"},
		{"a/b", "groundhog/a-b/day-3"},
		{"what?*[x]~^\\", "groundhog/what---x]---/day-3"},
		{"a..b", "groundhog/a-.b/day-3"},
		{".hidden", "groundhog/-hidden/day-3"},
		{"trailing.", "groundhog/trailing-/day-3"},
		{"x.lock", "groundhog/x-lock/day-3"},
		{"at@{now}", "groundhog/at-{now}/day-3"},
		{"tab\tnew\nline", "groundhog/tab-new-line/day-3"},
		{"ünïcødé", "groundhog/ünïcødé/day-3"},
		{"bad\xffutf8", "groundhog/bad-utf8/day-3"},
	}
	for _, tt := range tests {
		got, err := gitops.ScratchBranchName(tt.task, 3)
		if err != nil {
			t.Errorf("ScratchBranchName(%q): %v", tt.task, err)
			continue
		}
		if got != tt.want {
			t.Errorf("ScratchBranchName(%q) = %q, want %q", tt.task, got, tt.want)
		}
		checkRefFormat(t, got)
	}
}

// checkRefFormat fails unless git accepts name as a branch name.
func checkRefFormat(t testing.TB, name string) {
	t.Helper()
	cmd := exec.Command("git", "check-ref-format", "refs/heads/"+name)
	cmd.Env = append(processEnv(), testEnv()...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("git check-ref-format refuses %q: %v %s", name, err, out)
	}
}

func FuzzScratchBranchName(f *testing.F) {
	for _, s := range []string{"t1", "a..b", "x.lock", "@{", "-", ".", "a/b/", " ", "\x00", "é\xff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, task string) {
		name, err := gitops.ScratchBranchName(task, 1)
		if err != nil {
			return
		}
		if !strings.HasPrefix(name, gitops.ScratchPrefix) || !strings.HasSuffix(name, "/day-1") ||
			strings.Count(name, "/") != 2 {
			t.Fatalf("ScratchBranchName(%q) = %q", task, name)
		}
		checkRefFormat(t, name)
	})
}

func TestSnapshotOfTaskWithBadCharacters(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	s, err := f.repo.CreateSnapshot(f.ctx, "fix: the ~bug~ in a/b [urgent]?", 7, "main")
	if err != nil {
		t.Fatal(err)
	}
	const want = "groundhog/fix--the--bug--in-a-b--urgent]-/day-7"
	if s.ScratchBranch != want || f.branch() != want {
		t.Fatalf("scratch branch %q, HEAD on %q, want %q", s.ScratchBranch, f.branch(), want)
	}
	f.write("a.txt", "edit\n")
	sha, noChange, err := f.repo.CommitSuccess(f.ctx, s, "edit a", nil)
	if err != nil || noChange {
		t.Fatalf("CommitSuccess = %s, %v, %v", sha, noChange, err)
	}
	if f.branchExists(want) {
		t.Errorf("scratch branch kept")
	}
}
