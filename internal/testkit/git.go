package testkit

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// GitEnv isolates git from the machine it runs on: no global or system
// configuration, a fixed identity. Tests pass it to every git they run,
// and to engines whose Groundhog runs commit.
func GitEnv() []string {
	return []string{
		"GIT_CONFIG_GLOBAL=" + os.DevNull,
		"GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_NAME=Orbit Test",
		"GIT_AUTHOR_EMAIL=test@orbit.invalid",
		"GIT_COMMITTER_NAME=Orbit Test",
		"GIT_COMMITTER_EMAIL=test@orbit.invalid",
		"GIT_TERMINAL_PROMPT=0",
	}
}

// Git runs git in dir with GitEnv and returns its trimmed output, failing
// the test if it fails.
func Git(t testing.TB, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), GitEnv()...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// NewGitRepo creates a repository on branch main with one commit holding
// the given files (path → content), and returns its directory.
func NewGitRepo(t testing.TB, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	Git(t, dir, "init", "--quiet", "--initial-branch=main")
	if len(files) == 0 {
		files = map[string]string{"README.md": "# test repository\n"}
	}
	for path, content := range files {
		full := filepath.Join(dir, path)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	Git(t, dir, "add", "--all")
	Git(t, dir, "commit", "--quiet", "-m", "initial")
	return dir
}

// NewGitRepoWithOrigin creates a repository as NewGitRepo does, and a bare
// repository it pushes main to as its remote origin (main tracking
// origin/main). It returns the repository's directory and the origin's.
func NewGitRepoWithOrigin(t testing.TB, files map[string]string) (repo, origin string) {
	t.Helper()
	repo = NewGitRepo(t, files)
	origin = filepath.Join(t.TempDir(), "origin.git")
	Git(t, repo, "init", "--quiet", "--bare", "--initial-branch=main", origin)
	Git(t, repo, "remote", "add", "origin", origin)
	Git(t, repo, "push", "--quiet", "--set-upstream", "origin", "main")
	return repo, origin
}
