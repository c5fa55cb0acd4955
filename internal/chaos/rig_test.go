package chaos_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/internal/testkit"
)

// rig is what a trial runs on: a fresh project with the job, an effects
// file outside it, for a Groundhog job a fresh repository and its task,
// and the current incarnation of the engine.
type rig struct {
	t       *testing.T
	job     *job
	p       *testkit.Project
	effects string
	repo    string
	task    string
	eng     *engine
	// origin and forge are a ship job's bare origin and, in pr mode, the
	// forge that holds its pull requests.
	origin string
	forge  *testkit.ForgeServer
	// lives are the engines started so far, the current one last.
	lives []*engine
	// shared: the engines share a cluster rather than an embedded store.
	shared bool
}

// cliTimeout bounds every CLI command a trial runs.
const cliTimeout = 60 * time.Second

func newRig(t *testing.T, j *job) *rig {
	t.Helper()
	r := &rig{t: t, job: j, p: testkit.NewProject(t)}
	r.effects = filepath.Join(t.TempDir(), "effects.txt")
	r.p.Env = append(r.p.Env, testkit.GitEnv()...)
	r.p.Env = append(r.p.Env, "CHAOS_EFFECTS="+r.effects)
	if j.groundhog {
		_, fixture := groundhogFiles(t)
		r.repo = testkit.NewGitRepo(t, map[string]string{"README.md": "# greeter\n"})
		r.p.Env = append(r.p.Env, "CHAOS_REPO="+r.repo, "ORBIT_REPLAY_FIXTURE="+fixture)
	}
	if j.held {
		data, err := os.ReadFile(filepath.Join("testdata", "activities", "chaos_held.yaml"))
		if err != nil {
			t.Fatalf("reading the activity chaos_held: %v", err)
		}
		r.p.WriteFile(filepath.Join(".orbit", "activities", "chaos_held.yaml"), string(data))
	}
	if j.ship != "" {
		r.shipRepo()
	} else {
		r.p.WriteFile(filepath.Join(".orbit", "jobs", j.jobName()+".yaml"), j.yaml(t))
	}
	t.Cleanup(r.stop)
	return r
}

// start starts an engine, with ORBIT_FAILPOINT=failpoint if not empty.
func (r *rig) start(failpoint string) error {
	e, err := startEngine(r.p, failpoint)
	if e != nil {
		r.lives = append(r.lives, e)
		r.eng = e
	}
	return err
}

// stop stops the current engine; a trial ends with it.
func (r *rig) stop() {
	if r.eng == nil {
		return
	}
	r.eng.stop()
	r.eng.forgetInfo(r.p)
}

// orbit runs a CLI command against the current engine. It never starts
// an engine of its own (it names the engine's URL): with none serving it
// fails. A command whose engine dies under it is stopped at once rather
// than left waiting for its request to time out.
func (r *rig) orbit(args ...string) (testkit.Result, error) {
	eng := r.eng
	if eng == nil || !eng.alive() {
		return testkit.Result{}, errEngineGone
	}
	cmd := r.p.Command(append([]string{"--nats-url", eng.url}, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		return testkit.Result{}, err
	}
	done := make(chan struct{})
	go func() {
		select {
		case <-eng.exited:
			_ = cmd.Process.Kill()
		case <-time.After(cliTimeout):
			_ = cmd.Process.Kill()
		case <-done:
		}
	}()
	err := cmd.Wait()
	close(done)
	res := testkit.Result{Stdout: stdout.String(), Stderr: stderr.String()}
	var exitErr *exec.ExitError
	switch {
	case errors.As(err, &exitErr) && exitErr.ExitCode() < 0: // killed above
		if !eng.alive() {
			return res, errEngineGone
		}
		return res, fmt.Errorf("orbit %s: no answer within %s", strings.Join(args, " "), cliTimeout)
	case errors.As(err, &exitErr):
		res.Code = exitErr.ExitCode()
	case err != nil:
		return res, err
	}
	return res, nil
}

// orbitOK is orbit for commands that must exit 0.
func (r *rig) orbitOK(args ...string) (string, error) {
	res, err := r.orbit(args...)
	if err != nil {
		return "", fmt.Errorf("orbit %s: %w", strings.Join(args, " "), err)
	}
	if res.Code != 0 {
		return "", fmt.Errorf("orbit %s: %s", strings.Join(args, " "), res)
	}
	return res.Stdout, nil
}

// createTask creates the Groundhog task of the example plan on the rig's
// repository.
func (r *rig) createTask() error {
	if r.job.ship != "" {
		return r.addShipTask()
	}
	plan, _ := groundhogFiles(r.t)
	out, err := r.orbitOK("task", "create", "--title", "Greeter", "--plan", plan, "--workspace", r.repo)
	r.task = strings.TrimSpace(out)
	return err
}

// submit requests a run of the job, detached, and returns its id.
func (r *rig) submit() (string, error) {
	args := []string{"job", "run", r.job.jobName(), "--detach"}
	switch {
	case r.job.ship != "":
		args = append(args, "--input", r.shipInput())
	case r.job.groundhog:
		input, err := json.Marshal(map[string]string{"task_id": r.task})
		if err != nil {
			return "", err
		}
		args = append(args, "--input", string(input))
	}
	out, err := r.orbitOK(args...)
	return strings.TrimSpace(out), err
}

// runView is the part of `orbit run show --json` the checks read.
type runView struct {
	ID     string            `json:"id"`
	State  string            `json:"state"`
	Output any               `json:"output"`
	Error  *events.ErrorInfo `json:"error"`
}

// run returns the run's view.
func (r *rig) run(runID string) (*runView, error) {
	out, err := r.orbitOK("run", "show", "--json", runID)
	if err != nil {
		return nil, err
	}
	var v runView
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		return nil, fmt.Errorf("decoding the run view: %w\n%s", err, out)
	}
	return &v, nil
}

// latestRun returns the id of the project's latest run, or "".
func (r *rig) latestRun() (string, error) {
	res, err := r.orbit("run", "show", "--json")
	if err != nil || res.Code != 0 {
		return "", err
	}
	var v runView
	if err := json.Unmarshal([]byte(res.Stdout), &v); err != nil {
		return "", err
	}
	return v.ID, nil
}

// events returns every event of the run.
func (r *rig) events(runID string) ([]events.Event, error) {
	out, err := r.orbitOK("run", "events", "--json", runID)
	if err != nil {
		return nil, err
	}
	var evs []events.Event
	if err := json.Unmarshal([]byte(out), &evs); err != nil {
		return nil, fmt.Errorf("decoding the run's events: %w", err)
	}
	return evs, nil
}

// git runs git in the rig's repository.
func (r *rig) git(args ...string) (string, error) { return gitIn(r.repo, args...) }

// gitIn runs git in dir.
func gitIn(dir string, args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(cmd.Environ(), testkit.GitEnv()...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("git %s: %w\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out)), nil
}

// story describes the engines of the trial, for a failure report: how
// each ended, the end of the last one's log, and the Groundhog chronicle
// (a ship job: the record) of the task if there is one.
func (r *rig) story() string {
	var b strings.Builder
	for i, e := range r.lives {
		end := "running"
		if !e.alive() {
			end = e.state.String()
		}
		fmt.Fprintf(&b, "engine %d (%s, pid %d): %s\n", i+1, e.id, e.cmd.Process.Pid, end)
	}
	if r.eng != nil {
		fmt.Fprintf(&b, "last engine's stderr:\n%s\n", r.eng.stderr)
	}
	if r.task != "" {
		show := []string{"groundhog", "show", r.task}
		if r.job.ship != "" {
			show = []string{"task", "show", r.task}
		}
		if res, err := r.orbit(show...); err == nil {
			fmt.Fprintf(&b, "orbit %s:\n%s", strings.Join(show, " "), res.Stdout)
		}
	}
	return b.String()
}
