package activity

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"time"

	"github.com/orbitrun/orbit/agent"
	"github.com/orbitrun/orbit/assets"
	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/internal/proc"
	"github.com/orbitrun/orbit/internal/sandbox"
	"github.com/orbitrun/orbit/interpreter"
)

const (
	// inlineLimit is how much of a stream a shell step's output carries
	// inline; the whole stream goes to a blob when it is longer.
	inlineLimit = 64 << 10
	// captureLimit is how much of a stream is kept at all.
	captureLimit = 32 << 20
	// tailPreview is how much of a stream's end shell.exited shows.
	tailPreview = 512
)

// capture is an io.Writer that keeps the first limit bytes and counts all.
type capture struct {
	buf   bytes.Buffer
	size  int64
	limit int
}

func (c *capture) Write(p []byte) (int, error) {
	c.size += int64(len(p))
	if room := c.limit - c.buf.Len(); room > 0 {
		c.buf.Write(p[:min(room, len(p))])
	}
	return len(p), nil
}

// ReadFrom reads r, the program's end of a pipe, into the buffer itself
// (io.Copy's way would allocate 32 KiB for each stream of each step, most
// of which print a line), and discards what is past the limit.
func (c *capture) ReadFrom(r io.Reader) (int64, error) {
	var total int64
	for {
		room := c.limit - c.buf.Len()
		if room <= 0 {
			n, err := io.Copy(io.Discard, r)
			c.size += n
			return total + n, err
		}
		c.buf.Grow(min(room, 4<<10))
		b := c.buf.AvailableBuffer()
		n, err := r.Read(b[:min(room, cap(b))])
		c.buf.Write(b[:n])
		c.size += int64(n)
		total += int64(n)
		if errors.Is(err, io.EOF) {
			return total, nil
		}
		if err != nil {
			return total, err
		}
	}
}

// shellRun is one execution of a shell step attempt.
type shellRun struct {
	cmd *interpreter.StepCommand
	log *events.Log
	// ready, when set, waits until the step's activity.started is stored
	// (see execution.ready): the fork waits for it.
	ready func() error
	// last records shell.exited, which the worker stores with the
	// step's end.
	last func(typ string, payload any)
	// sandbox is the CLI agents' sandbox, which a step of an activity
	// with sandbox: agent runs in (nil: none, recorded so).
	sandbox *sandbox.Policy
}

// run executes the program in its own process group (package proc): a
// timeout or an ended ctx stops the group, and whatever is left of it is
// killed when the program exits, so a shell step never leaves processes
// behind. Rendered arguments are passed as argv elements, never re-split by
// a shell.
func (s *shellRun) run(ctx context.Context) (any, error) {
	spec := s.cmd.Activity
	if !slices.Contains(spec.AllowedPrograms, spec.Program) {
		return nil, interpreter.Fail(events.KindAllowlist, false, "program %q is not in allowed_programs %v", spec.Program, spec.AllowedPrograms)
	}
	if fi, err := os.Stat(s.cmd.Workspace); err != nil || !fi.IsDir() {
		return nil, interpreter.Fail(events.KindValidation, false, "workspace %s is not a directory", s.cmd.Workspace)
	}
	timeout := time.Duration(s.cmd.Timeout) * time.Second
	if timeout <= 0 {
		timeout = 300 * time.Second
	}

	stdout := &capture{limit: captureLimit}
	stderr := &capture{limit: captureLimit}
	c := exec.Command(spec.Program, spec.Args...)
	c.Dir = s.cmd.Workspace
	c.Stdout, c.Stderr = stdout, stderr
	env := os.Environ()
	mode, unenforced := "", ""
	if spec.Sandbox == assets.SandboxAgent {
		// The code it runs is an agent's: it gets what an agent gets, the
		// environment's allowlist and the agents' sandbox.
		env, mode = agent.AgentEnviron(env, nil), sandbox.ModeNone
		if s.sandbox != nil {
			var err error
			if mode, err = sandbox.Wrap(c, s.sandbox.ForWorkspace(s.cmd.Workspace)); err != nil {
				return nil, interpreter.Fail(events.KindActivity, false, "starting %s: %v", spec.Program, err)
			}
		}
		unenforced = sandbox.Unenforced(mode)
	}
	c.Env = append(env,
		"ORBIT_RUN_ID="+s.cmd.RunID,
		"ORBIT_STEP_KEY="+s.cmd.StepKey,
		"ORBIT_STEP_ATTEMPT="+strconv.Itoa(s.cmd.Attempt),
		"ORBIT_WORKSPACE="+s.cmd.Workspace,
		"TRACEPARENT="+s.cmd.Traceparent,
	)
	g, err := proc.StartWhen(ctx, c, s.ready)
	var nr *notRecorded
	if errors.As(err, &nr) {
		return nil, err
	}
	if err != nil {
		return nil, interpreter.Fail(events.KindActivity, false, "starting %s: %v", spec.Program, err)
	}
	res := g.WaitExit(ctx, timeout, interpreter.KillGrace)
	// What left the program's group is swept while its output is
	// described (and stored, when it is long), and is gone before the
	// step's end is sent.
	swept := make(chan struct{})
	go func() {
		defer close(swept)
		g.Sweep()
	}()
	defer func() { <-swept }()
	exitCode, signal, timedOut := res.ExitCode, res.Signal, res.TimedOut

	exited := events.ShellExitedData{
		Attempt:    s.cmd.Attempt,
		Program:    spec.Program,
		Args:       spec.Args,
		PID:        g.PID(),
		ExitCode:   exitCode,
		Signal:     signal,
		TimedOut:   timedOut,
		Sandbox:    mode,
		Unenforced: unenforced,
	}
	expected := spec.ExpectedExitCodes
	if len(expected) == 0 {
		expected = []int{0}
	}
	failed := timedOut || signal != "" || !slices.Contains(expected, exitCode)
	out := map[string]any{"exit_code": exitCode}
	if exited.Stdout, err = s.stream(ctx, stdout, out, "stdout", failed); err != nil {
		return nil, err
	}
	if exited.Stderr, err = s.stream(ctx, stderr, out, "stderr", failed); err != nil {
		return nil, err
	}
	s.last(events.ShellExited, exited)
	switch {
	case timedOut:
		return nil, interpreter.Fail(events.KindTimeout, true, "%s timed out after %s; its process group was killed", spec.Program, timeout)
	case ctx.Err() != nil:
		return nil, ctx.Err()
	}
	if signal != "" || !slices.Contains(expected, exitCode) {
		return nil, interpreter.Fail(events.KindActivity, true, "%s %s%s", spec.Program, describeExit(exitCode, signal, expected), proc.LastLine(stderr.buf.Bytes()))
	}
	return out, nil
}

// stream puts a captured stream into the step output (inline up to
// inlineLimit, and as a blob when longer) and describes it for shell.exited.
// A failed step has no output, so its stream is a blob too when the
// preview does not hold it whole: orbit run logs reads it there.
func (s *shellRun) stream(ctx context.Context, c *capture, out map[string]any, name string, failed bool) (events.OutputStream, error) {
	data := c.buf.Bytes()
	st := events.OutputStream{Size: c.size, Truncated: c.size > int64(len(data))}
	tail := data[max(0, len(data)-tailPreview):]
	st.Preview = s.log.Redactor().String(string(tail))
	small := len(data) <= inlineLimit && !st.Truncated
	if small && (!failed || len(data) <= tailPreview) {
		out[name] = string(data)
		return st, nil
	}
	ref, err := s.log.PutBlob(ctx, data)
	if err != nil {
		return st, err
	}
	st.Blob = &ref
	if small {
		out[name] = string(data)
		return st, nil
	}
	out[name] = string(data[:inlineLimit])
	out[name+"_truncated"] = true
	out[name+"_blob"] = ref.Digest
	return st, nil
}

func describeExit(code int, signal string, expected []int) string {
	if signal != "" {
		return "was killed by " + signal
	}
	return fmt.Sprintf("exited with code %d (expected %v)", code, expected)
}
