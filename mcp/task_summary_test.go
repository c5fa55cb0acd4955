package mcp_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"os/exec"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/activity"
	"github.com/orbitrun/orbit/engine"
	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/internal/testkit"
	"github.com/orbitrun/orbit/mcp"
	"github.com/orbitrun/orbit/projector"
)

// taskEnv is what a CLI agent of an agent step bound to the task is
// started with: the engine, the agent identity, the task and the step's
// token.
func (l *live) taskEnv(token string) []string {
	return []string{
		"ORBIT_NATS_URL=" + l.url,
		"ORBIT_NKEY=" + events.CredsFile(engine.CredsDir(l.p.Root), events.IdentityAgent),
		mcp.EnvTaskID + "=" + l.task,
		mcp.EnvTaskToken + "=" + token,
	}
}

// taskClient starts `orbit mcp` with the environment of an agent step
// bound to the task and connects an MCP client to it.
func (l *live) taskClient(token string) *sdk.ClientSession {
	l.t.Helper()
	return l.connect(l.taskEnv(token))
}

func (l *live) summary() string {
	l.t.Helper()
	var v projector.TaskView
	r := l.p.Orbit("--json", "task", "show", l.task)
	require.Equal(l.t, 0, r.Code, r.String())
	require.NoError(l.t, json.Unmarshal([]byte(r.Stdout), &v))
	return v.ExecutionSummary
}

// runCmd runs a command of the binary and returns what it printed and how
// it exited.
func runCmd(t *testing.T, cmd *exec.Cmd) testkit.Result {
	t.Helper()
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	var exitErr *exec.ExitError
	if errors.As(err, &exitErr) {
		code = exitErr.ExitCode()
	} else {
		require.NoError(t, err)
	}
	return testkit.Result{Stdout: stdout.String(), Stderr: stderr.String(), Code: code}
}

// TestAnAgentStepRecordsItsSummaryWithItsToken: as the agent identity, with
// its step's task token, a CLI agent records its execution summary through
// orbit mcp's task_summary or orbit task update --summary; a token that
// scopes no open step of the task is refused, and so is one whose step has
// ended.
func TestAnAgentStepRecordsItsSummaryWithItsToken(t *testing.T) {
	t.Parallel()
	l := startLive(t)
	b, err := l.e.Shipping().Bind(testkit.Context(t), activity.StepRef{RunID: "RUN", StepKey: "implement", Attempt: 1}, l.task)
	require.NoError(t, err)

	cs := l.taskClient(b.Token)
	tools, err := cs.ListTools(testkit.Context(t), nil)
	require.NoError(t, err)
	require.Len(t, tools.Tools, 1, "a task step's server offers the summary, not the verbs")
	assert.Equal(t, mcp.ToolTaskSummary, tools.Tools[0].Name)
	text, isErr := call(t, cs, mcp.ToolTaskSummary, map[string]any{"summary": "Added one.txt and checked it exists."})
	require.False(t, isErr, text)
	assert.Equal(t, "Added one.txt and checked it exists.", l.summary())

	foreign := l.taskClient("not-a-token")
	text, isErr = call(t, foreign, mcp.ToolTaskSummary, map[string]any{"summary": "sneaky"})
	assert.True(t, isErr)
	assert.Contains(t, text, "refused")

	run := func(token string, args ...string) testkit.Result {
		cmd := l.p.Command(args...)
		cmd.Dir = t.TempDir()
		cmd.Env = append(cmd.Env, l.taskEnv(token)...)
		return runCmd(t, cmd)
	}
	r := run(b.Token, "task", "update", l.task, "--summary", "Rewrote one.txt, checked it again.")
	require.Equal(t, 0, r.Code, r.String())
	assert.Equal(t, "Rewrote one.txt, checked it again.", l.summary())
	r = run(b.Token, "task", "update", l.task, "--status", "done")
	assert.Equal(t, 2, r.Code, "an agent step may record its summary and nothing else: %s", r)
	b.Release()
	r = run(b.Token, "task", "update", l.task, "--summary", "too late")
	assert.Equal(t, 1, r.Code, r.String())
	assert.Contains(t, r.Stderr, "refused")
	assert.Equal(t, "Rewrote one.txt, checked it again.", l.summary())
}
