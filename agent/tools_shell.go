package agent

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/orbitrun/orbit/internal/proc"
)

const (
	// defaultExecTimeout is shell.exec's timeout when the model gives none.
	defaultExecTimeout = 60
	// maxExecTimeout is the longest timeout, in seconds, a model may ask.
	maxExecTimeout = 600
	// execKillGrace is how long a timed-out process group gets between
	// SIGTERM and SIGKILL.
	execKillGrace = 2 * time.Second
	// streamKeep is how much of each end of a stream is kept: the start of
	// an output says what ran, its end how it finished.
	streamKeep = 32 << 10
	// streamsShown is how much of stdout and stderr together a result
	// shows, leaving room under maxResult for the headers and notes.
	streamsShown = maxResult - 1<<10
)

type execInput struct {
	Program        string   `json:"program"`
	Args           []string `json:"args"`
	TimeoutSeconds int      `json:"timeout_seconds"`
}

// shellExec runs an allowlisted program in the workspace.
//
// IMPORTANT: shell.exec does not check paths or the fsProfile: a program
// may read and write whatever the engine's user can, .git/ included. The
// allowlist (an exact match on the program string) is its only boundary,
// so a spec that allows a shell or an interpreter allows everything.
//
// The program is looked up in the engine's PATH (not tc.Env's); a relative
// path with a slash is relative to the workspace.
var shellExec = newBuiltin("shell.exec",
	"Run a program in the workspace directory and return its exit code, stdout and stderr. "+
		"The program must be one the activity allows; it is run directly with args as its argument list "+
		"(no shell: no pipes, globs, redirections or variable expansion, and an argument with spaces stays one argument). "+
		"A non-zero exit code is reported, not an error. The program and everything it started are killed "+
		"when it exits or when the timeout passes. Long output is cut in the middle: its start and end are kept, about 64 KiB in all.",
	[]toolField{
		{name: "program", typ: "string", desc: "The program to run, exactly as it appears in the allowlist.", required: true},
		{name: "args", typ: "array", desc: "Its arguments, one element per argument."},
		{name: "timeout_seconds", typ: "integer", desc: "Seconds before the program is killed (default 60).",
			extra: map[string]any{"minimum": 1, "maximum": maxExecTimeout}},
	},
	runExec)

// runExec runs the program in its own process group, as shell steps run. A
// timeout or an ended ctx sends SIGTERM to the group, then SIGKILL after a
// grace period; when the program exits, whatever is left of its group is
// killed, so a call never leaves processes behind.
func runExec(ctx context.Context, tc *ToolContext, in *execInput) (string, error) {
	if in.Program == "" {
		return "", errors.New("program must not be empty")
	}
	if !slices.Contains(tc.AllowedPrograms, in.Program) {
		return "", &DeniedError{Tool: "shell.exec", Reason: fmt.Sprintf("program %q is not in the allowlist [%s]", in.Program, strings.Join(tc.AllowedPrograms, ", "))}
	}
	secs := in.TimeoutSeconds
	switch {
	case secs == 0:
		secs = defaultExecTimeout
	case secs < 0 || secs > maxExecTimeout:
		return "", fmt.Errorf("timeout_seconds must be between 1 and %d, got %d", maxExecTimeout, secs)
	}
	timeout := time.Duration(secs) * time.Second
	if fi, err := os.Stat(tc.Workspace); err != nil || !fi.IsDir() {
		return "", fmt.Errorf("workspace %s is not a directory", tc.Workspace)
	}

	stdout, stderr := newExecCapture(), newExecCapture()
	c := exec.Command(in.Program, in.Args...)
	c.Dir = tc.Workspace
	c.Env = tc.Env // nil: the engine's environment
	c.Stdout, c.Stderr = stdout, stderr
	g, err := proc.Start(ctx, c)
	if err != nil {
		return "", fmt.Errorf("starting %s: %w", in.Program, err)
	}
	res := g.Wait(ctx, timeout, execKillGrace)
	status := fmt.Sprintf("exit code %d", res.ExitCode)
	if res.Signal != "" {
		status = "killed by signal: " + res.Signal
	}
	switch {
	case res.TimedOut:
		return "", fmt.Errorf("%s timed out after %s; its process group was killed\n%s",
			in.Program, timeout, formatExec(status, stdout, stderr))
	case ctx.Err() != nil:
		return "", fmt.Errorf("%s was stopped: %w", in.Program, ctx.Err())
	}
	return formatExec(status, stdout, stderr), nil
}

// formatExec is the text a model sees of a finished program.
func formatExec(status string, stdout, stderr *execCapture) string {
	outBudget, errBudget := splitBudget(stdout.size, stderr.size, streamsShown)
	var b strings.Builder
	b.WriteString(status)
	b.WriteString("\n--- stdout ---\n")
	b.WriteString(withNewline(stdout.show(outBudget)))
	b.WriteString("--- stderr ---\n")
	b.WriteString(withNewline(stderr.show(errBudget)))
	return b.String()
}

func withNewline(s string) string {
	if s == "" || strings.HasSuffix(s, "\n") {
		return s
	}
	return s + "\n"
}

// splitBudget shares total bytes between two streams of sizes a and b: a
// stream shorter than half gets all it needs, the other the rest.
func splitBudget(a, b int64, total int) (int, int) {
	half := int64(total / 2)
	switch {
	case a+b <= int64(total):
		return int(a), int(b)
	case a < half:
		return int(a), total - int(a)
	case b < half:
		return total - int(b), int(b)
	}
	return int(half), total - int(half)
}

// execCapture is an io.Writer that keeps the first and the last streamKeep
// bytes written to it and counts all. One goroutine writes it; it is read
// after the writer is done.
type execCapture struct {
	head []byte
	tail proc.Tail // what comes after head
	size int64
}

func newExecCapture() *execCapture { return &execCapture{tail: proc.Tail{Max: streamKeep}} }

func (c *execCapture) Write(p []byte) (int, error) {
	c.size += int64(len(p))
	q := p
	if room := streamKeep - len(c.head); room > 0 {
		n := min(room, len(q))
		c.head = append(c.head, q[:n]...)
		q = q[n:]
	}
	if len(q) > 0 {
		_, _ = c.tail.Write(q)
	}
	return len(p), nil
}

// show returns the stream when it fits in budget bytes, else its start and
// its end with a note of what was left out between them.
func (c *execCapture) show(budget int) string {
	kept := string(c.head) + string(c.tail.Bytes())
	if c.size <= int64(budget) && c.size == int64(len(kept)) {
		return kept
	}
	half := budget / 2
	start := kept[:runeCut(kept, min(half, len(kept)))]
	from := max(len(start), len(kept)-half)
	for from < len(kept) && from > len(start) && !utf8.RuneStart(kept[from]) {
		from++
	}
	end := kept[from:]
	return fmt.Sprintf("%s\n… [truncated, %d bytes total; %d shown from the start and %d from the end] …\n%s",
		start, c.size, len(start), len(end), end)
}
