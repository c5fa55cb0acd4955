package activity_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/agent"
	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/internal/runrig"
	"github.com/orbitrun/orbit/internal/testkit"
)

func TestCLIBackendReadsTheEnvelopeAndParsesTheResult(t *testing.T) {
	t.Parallel()
	log, dir := cliEngine(t)
	script := runrig.WriteScript(t, `cat > envelope.json
echo "reading the envelope"
echo "a warning" >&2
echo "second line"
printf '{"type":"result","subtype":"success","is_error":false,"result":"fixed it","num_turns":3,"usage":{"input_tokens":11,"output_tokens":7,"cache_read_input_tokens":2,"cache_creation_input_tokens":1},"modelUsage":{"claude-x":{}}}\n'
`)
	runID, fin := runrig.RunJob(t, log, runrig.CLIJob(t, script, agent.OutputClaudeJSON, 30), nil)
	require.Equal(t, events.StateSuccess, fin.State, "%+v", fin.Error)
	out := fin.Output.(map[string]any)
	assert.Equal(t, "fixed it", out["final_message"])
	assert.Equal(t, float64(3), out["turns"])
	assert.Equal(t, "claude-x", out["model"])
	assert.Equal(t, float64(11), out["usage"].(map[string]any)["input_tokens"])

	var env agent.Envelope
	data, err := os.ReadFile(filepath.Join(dir, "envelope.json"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(data, &env))
	assert.Equal(t, "You fix builds for 42.", env.Instruction)
	assert.Equal(t, "Fix the build.", env.Prompt)
	assert.Equal(t, []string{"fs.read", "shell.exec"}, env.Tools)
	assert.Equal(t, "claude-x", env.Model)
	assert.Equal(t, runID, env.RunID)
	assert.Equal(t, map[string]any{"prompt": "Fix the build.", "ticket": float64(42)}, env.Input)

	evs := runrig.History(t, log, runID)
	lines := runrig.DecodeAll[events.CLIOutputData](t, runrig.OfType(evs, events.CLIOutput))
	var stdout, stderr []string
	for _, l := range lines {
		if l.Stream == "stdout" {
			stdout = append(stdout, l.Text)
		} else {
			stderr = append(stderr, l.Text)
		}
	}
	assert.Equal(t, []string{"reading the envelope", "second line"}, stdout[:2], "stdout streamed line by line")
	assert.Equal(t, []string{"a warning"}, stderr)
	fins := runrig.DecodeAll[events.CLIInvocationFinishedData](t, runrig.OfType(evs, events.CLIInvocationFinished))
	require.Len(t, fins, 1)
	require.NotNil(t, fins[0].Stdout.Blob)
	blob, err := log.GetBlob(testkit.Context(t), fins[0].Stdout.Blob.Digest)
	require.NoError(t, err)
	assert.Contains(t, string(blob), `"result":"fixed it"`)
	assert.Len(t, runrig.OfType(evs, events.CLIInvocationStarted), 1)
}

func TestCLIBackendThatHangsIsKilledWithItsChildren(t *testing.T) {
	t.Parallel()
	log, dir := cliEngine(t)
	script := runrig.WriteScript(t, `sleep 60 &
echo $! > child.pid
echo $$ > agent.pid
sleep 60
`)
	began := time.Now()
	_, fin := runrig.RunJob(t, log, runrig.CLIJob(t, script, agent.OutputClaudeJSON, 1), nil)
	require.Equal(t, events.StateFailed, fin.State)
	assert.Equal(t, events.KindTimeout, fin.Error.Kind)
	assert.Less(t, time.Since(began), 10*time.Second)
	for _, name := range []string{"agent.pid", "child.pid"} {
		data, err := os.ReadFile(filepath.Join(dir, name))
		require.NoError(t, err)
		pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
		require.NoError(t, err)
		assert.True(t, testkit.WaitGone(pid, 3*time.Second), "%s %d is gone", name, pid)
	}
}

func TestCLIBackendFailures(t *testing.T) {
	t.Parallel()
	log := runrig.EngineLog(t)
	for name, tc := range map[string]struct{ script, output, msg string }{
		"exit code":     {"echo broken >&2; exit 4", agent.OutputText, "exited with code 4: broken"},
		"error result":  {`echo '{"type":"result","subtype":"error_max_turns","is_error":true,"result":"out of turns"}'`, agent.OutputClaudeJSON, "error_max_turns"},
		"codex failure": {`echo '{"type":"turn.failed","error":{"message":"sandbox refused"}}'`, agent.OutputCodexJSONL, "sandbox refused"},
	} {
		t.Run(name, func(t *testing.T) {
			_, fin := runrig.RunJob(t, log, runrig.CLIJob(t, runrig.WriteScript(t, tc.script), tc.output, 30), nil)
			require.Equal(t, events.StateFailed, fin.State)
			assert.Contains(t, fin.Error.Message, tc.msg)
		})
	}
	t.Run("codex success", func(t *testing.T) {
		_, fin := runrig.RunJob(t, log, runrig.CLIJob(t, runrig.WriteScript(t, `cat >/dev/null
echo '{"type":"thread.started","thread_id":"t"}'
echo '{"type":"item.completed","item":{"id":"i0","type":"agent_message","text":"all done"}}'
echo '{"type":"turn.completed","usage":{"input_tokens":100,"cached_input_tokens":40,"output_tokens":9}}'
`), agent.OutputCodexJSONL, 30), nil)
		require.Equal(t, events.StateSuccess, fin.State, "%+v", fin.Error)
		out := fin.Output.(map[string]any)
		assert.Equal(t, "all done", out["final_message"])
		assert.Equal(t, float64(40), out["usage"].(map[string]any)["cache_read_tokens"])
	})
}
