package activity_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/agent"
	"github.com/orbitrun/orbit/assets"
	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/internal/runrig"
	"github.com/orbitrun/orbit/internal/testkit"
)

// TestCompletionEnvelopeOverHTTP: an agent whose last turn was cut off at
// max_tokens has no completion record. By default that fails the step as
// incomplete, without a retry or the recovery activity; with
// require_completion_envelope: false the step succeeds with what it got.
func TestCompletionEnvelopeOverHTTP(t *testing.T) {
	t.Parallel()
	log := testkit.StartLog(t, events.Config{})
	fixture := writeFixture(t, t.TempDir(), "cut.json", `[
	  {"content": [{"kind": "text", "text": "The summary is"}], "stop_reason": "max_tokens"},
	  {"content": [{"kind": "text", "text": "The summary is"}], "stop_reason": "max_tokens"},
	  {"content": [{"kind": "text", "text": "The summary is"}], "stop_reason": "max_tokens"}
	]`)
	agentEngine(t, log, t.TempDir(), map[string]string{"ORBIT_REPLAY_FIXTURE": fixture})

	fixer, err := assets.ParseActivity("fixer.yaml", []byte(runrig.FixerActivity))
	require.NoError(t, err)
	job, err := assets.ParseJob("cut.yaml", []byte(agentJob(t, "        provider: claude\n",
		"\n      retry: {max_attempts: 3, initial_backoff_ms: 10}\n      recovery_activity: fixer")),
		func(string) (*assets.Activity, error) { return fixer, nil })
	require.NoError(t, err)
	runID, fin := runrig.RunJob(t, log, job, nil)
	require.Equal(t, events.StateFailed, fin.State)
	assert.Equal(t, events.KindIncomplete, fin.Error.Kind)
	assert.False(t, fin.Error.Retryable)
	assert.Contains(t, fin.Error.Message, "stop_reason max_tokens, not end_turn")
	evs := runrig.History(t, log, runID)
	assert.Len(t, runrig.OfType(evs, events.StepStarted), 1, "no retry and no recovery")
	assert.Empty(t, runrig.OfType(evs, events.StepRetryScheduled))

	_, fin = runrig.RunJob(t, log, runrig.ParseJob(t, agentJob(t, "        provider: claude\n        require_completion_envelope: false\n", "")), nil)
	require.Equal(t, events.StateSuccess, fin.State, "%+v", fin.Error)
	out := fin.Output.(map[string]any)
	assert.Equal(t, "max_tokens", out["stop_reason"])
	assert.Equal(t, "The summary is", out["final_message"])
}

// TestResponseEnvelope: with require_response_envelope the agent's final
// JSON object (here in a code fence) is output.response, which the next
// step reads; a final message that is not a JSON object fails the step.
func TestResponseEnvelope(t *testing.T) {
	t.Parallel()
	log := testkit.StartLog(t, events.Config{})
	dir := t.TempDir()
	withJSON := writeFixture(t, dir, "json.json", `[{"content": [{"kind": "text", "text": "`+"```json\\n{\\\"verdict\\\": \\\"approve\\\", \\\"blocking\\\": 0}\\n```"+`"}]}]`)
	prose := writeFixture(t, dir, "prose.json", `[{"content": [{"kind": "text", "text": "I approve."}]}]`)
	agentEngine(t, log, dir, nil)
	job := func(fixture string) string {
		return `
schemaVersion: 2
kind: Job
metadata: {name: envelope}
spec:
  steps:
    - id: review
      spec: {type: agent_loop, provider: replay, fixture: ` + fixture + `, require_response_envelope: true}
    - id: report
      spec: {type: deterministic, action: echo, config: {verdict: "{{ steps.review.output.response.verdict }}", blocking: "{{ steps.review.output.response.blocking }}"}}
`
	}
	_, fin := runrig.RunJob(t, log, runrig.ParseJob(t, job(withJSON)), nil)
	require.Equal(t, events.StateSuccess, fin.State, "%+v", fin.Error)
	out := fin.Output.(map[string]any)
	assert.Equal(t, "approve", out["verdict"])
	assert.Equal(t, float64(0), out["blocking"])

	_, fin = runrig.RunJob(t, log, runrig.ParseJob(t, job(prose)), nil)
	require.Equal(t, events.StateFailed, fin.State)
	assert.Equal(t, events.KindActivity, fin.Error.Kind)
	assert.Contains(t, fin.Error.Message, `require_response_envelope: the final message is not a JSON object: "I approve."`)
}

// TestCompletionEnvelopeOnTheCLIBackend: a CLI agent that exits 0 without
// its result record (claude_json) or a completed turn (codex_jsonl) is
// incomplete, unless require_completion_envelope is false.
func TestCompletionEnvelopeOnTheCLIBackend(t *testing.T) {
	t.Parallel()
	log := runrig.EngineLog(t)
	for name, tc := range map[string]struct{ script, output string }{
		"claude without a result": {"cat >/dev/null; echo 'I am done, honest.'", agent.OutputClaudeJSON},
		"codex without a turn":    {`cat >/dev/null; echo '{"type":"thread.started","thread_id":"t"}'`, agent.OutputCodexJSONL},
	} {
		t.Run(name, func(t *testing.T) {
			_, fin := runrig.RunJob(t, log, runrig.CLIJob(t, runrig.WriteScript(t, tc.script), tc.output, 30), nil)
			require.Equal(t, events.StateFailed, fin.State)
			assert.Equal(t, events.KindIncomplete, fin.Error.Kind)
			assert.False(t, fin.Error.Retryable)

			job := runrig.CLIJob(t, runrig.WriteScript(t, tc.script), tc.output, 30)
			off := false
			job.Spec.Steps[0].Activity.RequireCompletionEnvelope = &off
			_, fin = runrig.RunJob(t, log, job, nil)
			require.Equal(t, events.StateSuccess, fin.State, "%+v", fin.Error)
		})
	}
}
