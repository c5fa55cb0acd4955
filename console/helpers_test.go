package console_test

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/internal/testkit"
	"github.com/orbitrun/orbit/projector"
)

// site is a console that orbit serve --http serves, and its owner's token.
type site struct {
	// URL is the console's address, http://127.0.0.1:<port>.
	URL string
	// Token is the credential the console asks for, and Login the login
	// URL orbit serve printed ("" when it was given --http-token).
	Token, Login string
}

// serveConsole starts orbit serve --http on the project, as an operator
// would, and returns the console.
func serveConsole(t *testing.T, p *testkit.Project) *site {
	t.Helper()
	return serveConsoleOn(t, p, "127.0.0.1:0", "")
}

// serveConsoleOn is serveConsole on addr, with --http-token token when it
// is set.
func serveConsoleOn(t *testing.T, p *testkit.Project, addr, token string) *site {
	t.Helper()
	args := []string{"serve", "--listen", "127.0.0.1:0", "--http", addr}
	if token != "" {
		args = append(args, "--http-token", token)
	}
	cmd := p.Command(args...)
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	lines := make(chan string, 2)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if strings.HasPrefix(sc.Text(), "console ") {
				lines <- sc.Text()
			}
		}
	}()
	// "console at <url>", then the line that says how to log in, right
	// after it.
	var printed []string
	wait := time.After(30 * time.Second)
	for len(printed) < 2 {
		select {
		case l := <-lines:
			printed = append(printed, l)
			wait = time.After(5 * time.Second)
		case <-wait:
			if len(printed) == 0 {
				t.Fatal("orbit serve --http did not start")
			}
			printed = append(printed, "")
		}
	}
	c := consoleFrom(t, strings.Join(printed, "\n"))
	if token != "" {
		c.Token = token
	}
	waitFor(t, "the console", func() bool {
		code, _ := c.tryGet("/")
		return code == http.StatusOK
	})
	return c
}

// consoleFrom reads the console's address and login URL from what orbit
// serve printed.
func consoleFrom(t *testing.T, stderr string) *site {
	t.Helper()
	c := &site{}
	for _, line := range strings.Split(stderr, "\n") {
		if u, ok := strings.CutPrefix(line, "console at "); ok {
			c.URL = u
		}
		if strings.HasPrefix(line, "console login (") {
			c.Login = line[strings.LastIndex(line, " ")+1:]
			u, err := url.Parse(c.Login)
			require.NoError(t, err, line)
			c.Token = u.Query().Get("token")
		}
	}
	require.NotEmpty(t, c.URL, "the console's address: %s", stderr)
	return c
}

// request is a request for path on the console with the owner's token as
// a bearer token.
func (c *site) request(t *testing.T, method, path string) *http.Request {
	t.Helper()
	req, err := http.NewRequest(method, c.URL+path, nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+c.Token)
	return req
}

// post sends a POST for path as the owner with headers set, follows no
// redirect, and returns the status.
func (c *site) post(t *testing.T, path string, headers map[string]string) int {
	t.Helper()
	req := c.request(t, http.MethodPost, path)
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := noRedirect.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	return resp.StatusCode
}

// fromPage are the headers of a form the console's own page posts.
func (c *site) fromPage() map[string]string {
	return map[string]string{"Sec-Fetch-Site": "same-origin", "Origin": c.URL}
}

// get fetches a page as its owner and returns its status and body.
func (c *site) get(t *testing.T, path string) (int, string) {
	t.Helper()
	code, body := c.tryGet(path)
	require.NotZero(t, code, "GET %s", path)
	return code, body
}

// tryGet is get, with code 0 when the console cannot be reached.
func (c *site) tryGet(path string) (int, string) {
	req, err := http.NewRequest(http.MethodGet, c.URL+path, nil)
	if err != nil {
		return 0, err.Error()
	}
	req.Header.Set("Authorization", "Bearer "+c.Token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, err.Error()
	}
	return resp.StatusCode, string(body)
}

// groundhogProject is a project whose engine replays the demo's agent
// fixture and runs git isolated from this machine, with the demo's task
// (scripts/demo-groundhog.sh) on a fresh repository, run to the end. It
// returns the console and the task id.
func groundhogProject(t *testing.T) (c *site, task string) {
	t.Helper()
	p := testkit.NewProject(t)
	p.Env = append(p.Env, testkit.GitEnv()...)
	p.Env = append(p.Env, "ORBIT_REPLAY_FIXTURE="+filepath.Join(testkit.ModuleRoot(t), "examples", "groundhog", "fixture.json"))
	c = serveConsole(t, p)
	repo := testkit.NewGitRepo(t, map[string]string{"README.md": "# greeter\n"})
	r := p.Orbit("task", "create", "--title", "Greeter with a test",
		"--plan", filepath.Join(testkit.ModuleRoot(t), "examples", "groundhog", "plan.yaml"), "--workspace", repo)
	require.Equal(t, 0, r.Code, r.String())
	task = strings.TrimSpace(r.Stdout)
	r = p.Orbit("groundhog", "run", task)
	require.Equal(t, 0, r.Code, r.String())
	return c, task
}

// runJob runs a job to its end and returns the run's id.
func runJob(t *testing.T, p *testkit.Project, job string) string {
	t.Helper()
	r := p.Orbit("job", "run", job)
	id := strings.TrimSpace(strings.SplitN(r.Stdout, "\n", 2)[0])
	require.NotEmpty(t, id, r.String())
	return id
}

// startJob runs job detached (orbit job run --detach) and returns its
// run's id.
func startJob(t *testing.T, p *testkit.Project, job string) string {
	t.Helper()
	r := p.Orbit("job", "run", job, "--detach")
	require.Equal(t, 0, r.Code, r.String())
	return strings.TrimSpace(r.Stdout)
}

// runningJob starts job detached and returns its run's id once it runs.
func runningJob(t *testing.T, p *testkit.Project, job string) string {
	t.Helper()
	id := startJob(t, p, job)
	waitFor(t, "the run to start", func() bool { return showRun(t, p, id).State == events.StateRunning })
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
