package console_test

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/internal/testkit"
	"github.com/orbitrun/orbit/projector"
)

// serveConsole starts orbit serve --http on the project, as an operator
// would, and returns the console's base URL.
func serveConsole(t *testing.T, p *testkit.Project) string {
	t.Helper()
	return serveConsoleAuth(t, p, "127.0.0.1:0", "")
}

// serveConsoleAuth is serveConsole on addr, waiting for the console with
// token as the password when it is set.
func serveConsoleAuth(t *testing.T, p *testkit.Project, addr, token string) string {
	t.Helper()
	cmd := p.Command("serve", "--listen", "127.0.0.1:0", "--http", addr)
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	urls := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if u, ok := strings.CutPrefix(sc.Text(), "console at "); ok {
				urls <- u
			}
		}
	}()
	select {
	case u := <-urls:
		waitFor(t, "the console", func() bool {
			req, err := http.NewRequest(http.MethodGet, u+"/", nil)
			require.NoError(t, err)
			if token != "" {
				req.SetBasicAuth("", token)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				return false
			}
			resp.Body.Close()
			return resp.StatusCode == http.StatusOK
		})
		return u
	case <-time.After(30 * time.Second):
		t.Fatal("orbit serve --http did not start")
		return ""
	}
}

// groundhogProject is a project whose engine replays the demo's agent
// fixture and runs git isolated from this machine, with the demo's task
// (scripts/demo-groundhog.sh) on a fresh repository, run to the end. It
// returns the console's URL and the task id.
func groundhogProject(t *testing.T) (url, task string) {
	t.Helper()
	p := testkit.NewProject(t)
	p.Env = append(p.Env, testkit.GitEnv()...)
	p.Env = append(p.Env, "ORBIT_REPLAY_FIXTURE="+filepath.Join(testkit.ModuleRoot(t), "examples", "groundhog", "fixture.json"))
	url = serveConsole(t, p)
	repo := testkit.NewGitRepo(t, map[string]string{"README.md": "# greeter\n"})
	r := p.Orbit("task", "create", "--title", "Greeter with a test",
		"--plan", filepath.Join(testkit.ModuleRoot(t), "examples", "groundhog", "plan.yaml"), "--workspace", repo)
	require.Equal(t, 0, r.Code, r.String())
	task = strings.TrimSpace(r.Stdout)
	r = p.Orbit("groundhog", "run", task)
	require.Equal(t, 0, r.Code, r.String())
	return url, task
}

// runJob runs a job to its end and returns the run's id.
func runJob(t *testing.T, p *testkit.Project, job string) string {
	t.Helper()
	r := p.Orbit("job", "run", job)
	id := strings.TrimSpace(strings.SplitN(r.Stdout, "\n", 2)[0])
	require.NotEmpty(t, id, r.String())
	return id
}

// showRun is the run as orbit run show --json prints it.
func showRun(t *testing.T, p *testkit.Project, id string) projector.RunView {
	t.Helper()
	r := p.Orbit("run", "show", "--json", id)
	require.Equal(t, 0, r.Code, r.String())
	var v projector.RunView
	require.NoError(t, json.Unmarshal([]byte(r.Stdout), &v))
	return v
}

// get fetches a page and returns its status and body.
func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(body)
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// writeJob adds a job file to the project.
func writeJob(t *testing.T, p *testkit.Project, name, yaml string) {
	t.Helper()
	require.NoError(t, os.WriteFile(filepath.Join(p.Root, ".orbit", "jobs", name+".yaml"), []byte(yaml), 0o644))
}
