package chaos_test

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/orbitrun/orbit/internal/testkit"
)

// engine is one incarnation of `orbit serve` as a child process of the
// test: started, then killed (by the suite or by a failpoint) or stopped.
type engine struct {
	cmd    *exec.Cmd
	id     string // the engine id it logs (and records in events)
	url    string
	stderr *tail
	exited chan struct{} // closed once the process has been waited for
	state  *os.ProcessState
}

// readyTimeout bounds how long an engine may take to serve.
const readyTimeout = 30 * time.Second

// startEngine starts `orbit serve` on a free port of the project, with
// ORBIT_FAILPOINT set to failpoint if it is not empty, and waits until it
// serves. The engine's environment is the project's.
func startEngine(p *testkit.Project, failpoint string) (*engine, error) {
	cmd := p.Command("serve", "--listen", "127.0.0.1:0")
	if failpoint != "" {
		cmd.Env = append(cmd.Env, "ORBIT_FAILPOINT="+failpoint)
	}
	e := &engine{cmd: cmd, stderr: newTail(40), exited: make(chan struct{})}
	cmd.Stderr = e.stderr
	// The engine's step processes have pipes of their own, but a stray one
	// holding stderr must not keep Wait from returning.
	cmd.WaitDelay = 2 * time.Second
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	go func() {
		_ = cmd.Wait()
		e.state = cmd.ProcessState
		close(e.exited)
	}()
	select {
	case ready := <-e.stderr.ready:
		e.id, e.url = ready.id, ready.url
		return e, nil
	case <-e.exited:
		return e, fmt.Errorf("orbit serve exited before it served (%v):\n%s", e.state, e.stderr)
	case <-time.After(readyTimeout):
		e.kill()
		return e, fmt.Errorf("orbit serve did not serve within %s:\n%s", readyTimeout, e.stderr)
	}
}

// alive reports whether the process has not exited yet.
func (e *engine) alive() bool {
	select {
	case <-e.exited:
		return false
	default:
		return true
	}
}

// diesWithin reports whether the process has exited or exits within d.
func (e *engine) diesWithin(d time.Duration) bool {
	select {
	case <-e.exited:
		return true
	case <-time.After(d):
		return false
	}
}

// kill sends SIGKILL and waits until the process is gone.
func (e *engine) kill() {
	_ = e.cmd.Process.Signal(syscall.SIGKILL)
	<-e.exited
}

// stop asks the engine to stop (SIGTERM) and kills it if it does not.
func (e *engine) stop() {
	if !e.alive() {
		return
	}
	_ = e.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-e.exited:
	case <-time.After(15 * time.Second):
		e.kill()
	}
}

// killedBySIGKILL reports whether the process ended by SIGKILL, which is
// how a failpoint ends it.
func (e *engine) killedBySIGKILL() bool {
	if e.state == nil {
		return false
	}
	ws, ok := e.state.Sys().(syscall.WaitStatus)
	return ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL
}

// forgetInfo removes the root's engine.json if it still names this
// (dead) process, so that nothing later signals a pid that may have been
// reused.
func (e *engine) forgetInfo(p *testkit.Project) {
	if e.alive() || p.EnginePID() != e.cmd.Process.Pid {
		return
	}
	_ = os.Remove(filepath.Join(p.Root, ".orbit", "state", "engine.json"))
}

// readyLine is what the engine logs once it serves, with its id and
// client URL.
var readyLine = regexp.MustCompile(`engine running.* engine=(\S+) .*url=(\S+)`)

// serving is what the ready line says.
type serving struct{ id, url string }

// tail keeps the last lines an engine wrote to stderr, and reports its
// URL once it logs that it serves.
type tail struct {
	mu      sync.Mutex
	max     int
	lines   []string
	partial []byte
	ready   chan serving
	served  bool
}

func newTail(max int) *tail { return &tail{max: max, ready: make(chan serving, 1)} }

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.partial = append(t.partial, p...)
	for {
		i := bytes.IndexByte(t.partial, '\n')
		if i < 0 {
			break
		}
		line := string(t.partial[:i])
		t.partial = t.partial[i+1:]
		if m := readyLine.FindStringSubmatch(line); m != nil && !t.served {
			t.served = true
			t.ready <- serving{id: m[1], url: m[2]}
		}
		t.lines = append(t.lines, line)
		if len(t.lines) > t.max {
			t.lines = t.lines[1:]
		}
	}
	return len(p), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return strings.Join(t.lines, "\n")
}

// errEngineGone is returned by CLI calls made while no engine serves.
var errEngineGone = errors.New("the engine is not running")
