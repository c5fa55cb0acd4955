// Package proc runs programs the way Orbit runs every program it starts —
// shell steps, shell.exec calls, CLI agents, verifier commands: in a
// process group of their own whose leader dies with the engine (Pdeathsig),
// in a cgroup of their own where the machine lets the engine create one,
// and marked in their environment (TagVar), so that what leaves the group
// is still found; stopped as a group (SIGTERM, a grace period, SIGKILL),
// and never leaving processes behind.
package proc

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"time"
)

// outputDelay is how long Wait waits for output after the program exits.
const outputDelay = time.Second

// Group is a started program and its process group.
type Group struct {
	cmd    *exec.Cmd
	tag    string
	cgroup *cgroup // nil: found by its mark alone
	waited chan error
}

// Result says how a program ended.
type Result struct {
	ExitCode int    // -1 when it was killed by a signal or never reaped
	Signal   string // the signal that killed it, if one did
	TimedOut bool   // the timeout stopped it
	Stopped  bool   // ctx ended and stopped it
	Err      error  // what Wait returned
}

// Start starts cmd in a new process group whose leader gets SIGKILL if the
// engine dies, in a cgroup of its own if this process can create one (see
// cgroups), marked with TagVar under ctx's scope (see WithScope); the
// rest of cmd.SysProcAttr (a sandbox's namespaces) is kept. Unless
// cmd says otherwise, Wait stops waiting for output a second after the
// program exits: a background child that keeps its output pipes open must
// not hold it.
func Start(ctx context.Context, cmd *exec.Cmd) (*Group, error) {
	return start(ctx, cmd, true, nil)
}

// StartWhen is Start that calls ready once everything but the fork is
// done (the mark, the cgroup made) and forks only if it returns nil: a
// caller that must have something stored before the program runs waits
// for it there, while the rest of the start goes on. ready's error is
// returned as it is, and the cgroup is removed.
func StartWhen(ctx context.Context, cmd *exec.Cmd, ready func() error) (*Group, error) {
	return start(ctx, cmd, true, ready)
}

func start(ctx context.Context, cmd *exec.Cmd, inCgroup bool, ready func() error) (*Group, error) {
	tag := within(scopeOf(ctx), newTag())
	// The mark comes last, so it wins over one the environment holds:
	// Start keeps the last of each name (and adds PWD), in one pass that
	// cmd.Environ here would make twice.
	if cmd.Env == nil {
		cmd.Env = os.Environ()
	}
	cmd.Env = append(slices.Clip(cmd.Env), TagVar+"="+tag) // a copy: the caller's may be shared
	if cmd.WaitDelay == 0 {
		cmd.WaitDelay = outputDelay
	}
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid, cmd.SysProcAttr.Pdeathsig = true, syscall.SIGKILL
	var cg *cgroup
	if inCgroup {
		cg = newCgroup(cmd.SysProcAttr)
	}
	var err error
	if ready != nil {
		err = ready()
	}
	if err == nil {
		err = cmd.Start()
	}
	if cg != nil {
		cg.started(err == nil)
	}
	if err != nil {
		return nil, err
	}
	g := &Group{cmd: cmd, tag: tag, cgroup: cg, waited: make(chan error, 1)}
	go func() { g.waited <- cmd.Wait() }()
	return g, nil
}

// PID is the program's pid, which is also its process group id.
func (g *Group) PID() int { return g.cmd.Process.Pid }

// Wait waits for the program to exit. When timeout (if positive) passes or
// ctx ends first, the group gets SIGTERM, then SIGKILL after grace. When
// the program has exited, whatever is left of its group is killed, and
// every process that carries its mark.
func (g *Group) Wait(ctx context.Context, timeout, grace time.Duration) Result {
	r := g.WaitExit(ctx, timeout, grace)
	g.Sweep()
	return r
}

// WaitExit is Wait without the sweep for what left the group: it kills
// what is left of the group and returns. The caller calls Sweep before it
// reports the program done, and may do other work first.
func (g *Group) WaitExit(ctx context.Context, timeout, grace time.Duration) Result {
	var expired <-chan time.Time
	if timeout > 0 {
		t := time.NewTimer(timeout)
		defer t.Stop()
		expired = t.C
	}
	var r Result
	select {
	case r.Err = <-g.waited:
	case <-expired:
		r.TimedOut = true
		r.Err = g.stop(grace)
	case <-ctx.Done():
		r.Stopped = true
		r.Err = g.stop(grace)
	}
	_ = syscall.Kill(-g.PID(), syscall.SIGKILL)
	r.ExitCode, r.Signal = exitStatus(g.cmd, r.Err)
	return r
}

// Kill sends SIGKILL to the whole group and to everything the program
// started, in the group or not (see Sweep).
func (g *Group) Kill() {
	_ = syscall.Kill(-g.PID(), syscall.SIGKILL)
	g.Sweep()
}

// Sweep sends SIGKILL to everything the program started that left its
// group and still carries its mark. A program in a cgroup: to each such
// process in it, and waits until none is left to remove the cgroup (one
// read of its process list when none is). Otherwise: to every process
// that carries the program's mark, until a look finds none; sweeps that
// programs ending together ask for share their looks (see sweeper).
func (g *Group) Sweep() {
	if g.cgroup != nil {
		g.cgroup.empty(isTag(g.tag))
		return
	}
	sweeps.sweep(isTag(g.tag))
}

func (g *Group) stop(grace time.Duration) error {
	_ = syscall.Kill(-g.PID(), syscall.SIGTERM)
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case err := <-g.waited:
		return err
	case <-t.C:
	}
	g.Kill()
	return <-g.waited
}

func exitStatus(cmd *exec.Cmd, waitErr error) (int, string) {
	ps := cmd.ProcessState
	if ps == nil {
		return -1, ""
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return -1, ws.Signal().String()
	}
	var exitErr *exec.ExitError
	if errors.As(waitErr, &exitErr) {
		return exitErr.ExitCode(), ""
	}
	return ps.ExitCode(), ""
}

// LastLine returns ": <the last non-empty line of output>", capped, or "":
// the tail of an error message about a failed program.
func LastLine(b []byte) string {
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	last := strings.TrimSpace(lines[len(lines)-1])
	if last == "" {
		return ""
	}
	if len(last) > 200 {
		last = last[:200] + "…"
	}
	return ": " + last
}
