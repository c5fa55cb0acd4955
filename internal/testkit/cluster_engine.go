package testkit

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/orbitrun/orbit/events"
)

// ClusterProject is NewProject set up to use c: the project gets the
// cluster's identities (the seeds of c.Creds) and its commands the
// cluster's URLs and logKey, the log key every engine of the cluster shares.
func ClusterProject(t testing.TB, c *Cluster, logKey string) *Project {
	t.Helper()
	p := NewProject(t)
	dir := filepath.Join(p.Root, ".orbit", "state", "creds")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, id := range events.Identities {
		seed, err := os.ReadFile(c.Creds.File(id))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(events.CredsFile(dir, id), seed, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	p.Env = append(p.Env, "ORBIT_NATS_URL="+c.URLs(), "ORBIT_LOG_KEY="+logKey)
	return p
}

// Engine is `orbit serve` running as a child process, so that a test can
// kill -9 it or stop it with SIGSTOP.
type Engine struct {
	Cmd *exec.Cmd
	mu  sync.Mutex
	log strings.Builder
}

// Stderr is what the engine has logged so far.
func (e *Engine) Stderr() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.log.String()
}

// Kill sends SIGKILL and reaps the process.
func (e *Engine) Kill() {
	_ = e.Cmd.Process.Signal(syscall.SIGKILL)
	_ = e.Cmd.Wait()
}

// Stop sends SIGTERM and waits until the engine has exited (SIGKILL after
// 30s).
func (e *Engine) Stop() {
	_ = e.Cmd.Process.Signal(syscall.SIGTERM)
	exited := make(chan struct{})
	go func() {
		_ = e.Cmd.Wait()
		close(exited)
	}()
	select {
	case <-exited:
	case <-time.After(30 * time.Second):
		_ = e.Cmd.Process.Signal(syscall.SIGKILL)
		<-exited
	}
}

// Signal sends sig to the engine.
func (e *Engine) Signal(sig syscall.Signal) error { return e.Cmd.Process.Signal(sig) }

// StartEngine starts `orbit serve` on p with args and returns once it logs
// that it runs. It is killed when the test ends.
func StartEngine(t testing.TB, p *Project, args ...string) *Engine {
	t.Helper()
	return StartEngines(t, []*Project{p}, args...)[0]
}

// StartEngines starts `orbit serve` with args on each of ps at the same
// moment, as an init system starts the engines of a cluster, and returns
// once every one logs that it runs. They are killed when the test ends.
func StartEngines(t testing.TB, ps []*Project, args ...string) []*Engine {
	t.Helper()
	es := make([]*Engine, len(ps))
	ready := make([]chan struct{}, len(ps))
	for i, p := range ps {
		es[i], ready[i] = startEngine(t, p, args)
	}
	deadline := time.After(60 * time.Second)
	for i, e := range es {
		select {
		case _, running := <-ready[i]:
			if running {
				break
			}
			for _, e := range es {
				e.Kill()
			}
			t.Fatalf("orbit serve exited:\n%s", e.Stderr())
		case <-deadline:
			for _, e := range es {
				e.Kill()
			}
			t.Fatalf("orbit serve did not start:\n%s", e.Stderr())
		}
	}
	return es
}

// startEngine starts `orbit serve` on p. The channel yields a value once
// the engine logs that it runs, and is closed without one if its stderr
// ends first (it exited).
func startEngine(t testing.TB, p *Project, args []string) (*Engine, chan struct{}) {
	t.Helper()
	e := &Engine{Cmd: p.Command(append([]string{"serve"}, args...)...)}
	stderr, err := e.Cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ready := make(chan struct{}, 1)
	go func() {
		defer close(ready)
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		signalled := false
		for sc.Scan() {
			e.mu.Lock()
			e.log.WriteString(sc.Text() + "\n")
			e.mu.Unlock()
			if !signalled && strings.Contains(sc.Text(), "engine running") {
				ready <- struct{}{}
				signalled = true
			}
		}
	}()
	t.Cleanup(func() {
		if e.Cmd.ProcessState == nil {
			_ = e.Cmd.Process.Signal(syscall.SIGCONT)
			e.Kill()
		}
	})
	return e, ready
}
