package activity_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/activity"
	"github.com/orbitrun/orbit/assets"
	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/executor"
	"github.com/orbitrun/orbit/internal/runrig"
	"github.com/orbitrun/orbit/internal/testkit"
)

const fakeKey = "sk-ant-api03-FAKE-SECRET-KEY-for-tests-000111"

// agentEngine is an engine whose workers see env as their environment.
func agentEngine(t *testing.T, log *events.Log, root string, env map[string]string, resume ...string) *runrig.Engine {
	t.Helper()
	lookup := func(name string) (string, bool) { v, ok := env[name]; return v, ok }
	active := func(context.Context) ([]string, error) { return resume, nil }
	return runrig.Start(t, executor.Config{Log: log, Root: root, Env: lookup, ActiveRuns: active}, activity.WorkerConfig{Log: log, Env: lookup})
}

// claudeTurn is an Anthropic Messages API response body.
func claudeTurn(stop string, in, out int, content ...string) testkit.WireReply {
	return testkit.WireReply{Body: `{"id":"msg_01","type":"message","role":"assistant","model":"claude-sonnet-4-5",` +
		`"content":[` + strings.Join(content, ",") + `],"stop_reason":"` + stop + `","stop_sequence":null,` +
		`"usage":{"input_tokens":` + itoa(in) + `,"output_tokens":` + itoa(out) + `,"cache_creation_input_tokens":0,"cache_read_input_tokens":0}}`}
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

func textBlock(s string) string { return `{"type":"text","text":` + quote(s) + `}` }

func quote(s string) string { b, _ := json.Marshal(s); return string(b) }

func toolUse(id, name, input string) string {
	return `{"type":"tool_use","id":"` + id + `","name":"` + name + `","input":` + input + `}`
}

// agentJob is a one-step job with an inline agent_loop spec.
func agentJob(t *testing.T, spec string, retry string) string {
	t.Helper()
	return `
schemaVersion: 2
kind: Job
metadata: {name: agentic}
spec:
  steps:
    - id: agent` + retry + `
      default_input: {prompt: "Read notes.txt and summarise it."}
      spec:
        type: agent_loop
        instruction: You are careful.
` + spec
}

// everything returns every event and every blob of the log, as text.
func everything(t *testing.T, log *events.Log) string {
	t.Helper()
	ctx := testkit.Context(t)
	evs, err := log.Read(ctx, events.FollowOptions{})
	require.NoError(t, err)
	var b strings.Builder
	for _, ev := range evs {
		raw, _ := json.Marshal(ev)
		b.Write(raw)
		b.WriteByte('\n')
		var refs struct {
			Response   *events.BlobRef `json:"response"`
			Transcript *events.BlobRef `json:"transcript"`
			Result     *events.BlobRef `json:"result"`
		}
		_ = ev.Decode(&refs)
		for _, ref := range []*events.BlobRef{refs.Response, refs.Transcript, refs.Result} {
			if ref != nil {
				data, err := log.GetBlob(ctx, ref.Digest)
				require.NoError(t, err)
				b.Write(data)
			}
		}
	}
	return b.String()
}

// TestAgentLoopOverTheAnthropicWire runs an agent step against a local
// server speaking the Messages API: a tool round trip, then an answer.
func TestAgentLoopOverTheAnthropicWire(t *testing.T) {
	t.Parallel()
	log := testkit.StartLog(t, events.Config{})
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("orbit notes"), 0o644))
	ws := testkit.NewWireServer(t,
		claudeTurn("tool_use", 100, 20, textBlock("Let me read it."), toolUse("toolu_1", "fs_read", `{"path":"notes.txt"}`)),
		claudeTurn("end_turn", 150, 30, textBlock("The notes say: orbit notes.")),
	)
	agentEngine(t, log, dir, map[string]string{"ANTHROPIC_API_KEY": fakeKey})
	runID, fin := runrig.RunJob(t, log, runrig.ParseJob(t, agentJob(t, `        provider: claude
        model: claude-sonnet-4-5
        base_url: `+ws.URL()+`
        tools: [fs.read]
`, "")), nil)
	require.Equal(t, events.StateSuccess, fin.State, "%+v", fin.Error)
	out := fin.Output.(map[string]any)
	assert.Equal(t, "The notes say: orbit notes.", out["final_message"])
	assert.Equal(t, "end_turn", out["stop_reason"])
	assert.Equal(t, float64(2), out["turns"])
	assert.Equal(t, float64(1), out["tool_calls"])
	assert.Equal(t, map[string]any{"input_tokens": float64(250), "output_tokens": float64(50), "cache_read_tokens": float64(0), "cache_write_tokens": float64(0)}, out["usage"])

	reqs := ws.Received()
	require.Len(t, reqs, 2)
	assert.Equal(t, fakeKey, reqs[0].Header.Get("X-Api-Key"))
	second := string(reqs[1].Raw)
	assert.Contains(t, second, `"tool_use_id":"toolu_1"`, "the tool result went back")
	assert.Contains(t, second, "orbit notes")

	evs := runrig.History(t, log, runID)
	turns := runrig.DecodeAll[events.AgentTurnData](t, runrig.OfType(evs, events.AgentTurn))
	require.Len(t, turns, 2)
	assert.Equal(t, "claude", turns[0].Provider)
	assert.Equal(t, "claude-sonnet-4-5", turns[0].Model)
	assert.Equal(t, []string{"fs.read"}, turns[0].ToolUses)
	calls := runrig.DecodeAll[events.ToolCalledData](t, runrig.OfType(evs, events.ToolCalled))
	require.Len(t, calls, 1)
	assert.Equal(t, "fs.read", calls[0].Name)
	assert.Equal(t, len("orbit notes"), calls[0].ResultSize)
	assert.NotContains(t, everything(t, log), fakeKey, "the API key is never in an event or a blob")
}

func TestAgentLoopOverTheOpenAIWire(t *testing.T) {
	t.Parallel()
	log := testkit.StartLog(t, events.Config{})
	dir := t.TempDir()
	ws := testkit.NewWireServer(t,
		testkit.WireReply{Body: `{"id":"chatcmpl-1","object":"chat.completion","created":1700000000,"model":"qwen2.5-coder","choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"fs_write","arguments":"{\"path\":\"out.txt\",\"content\":\"made by a local model\"}"}}]},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":40,"completion_tokens":12,"total_tokens":52}}`},
		testkit.WireReply{Body: `{"id":"chatcmpl-2","object":"chat.completion","created":1700000001,"model":"qwen2.5-coder","choices":[{"index":0,"message":{"role":"assistant","content":"Wrote out.txt."},"finish_reason":"stop"}],"usage":{"prompt_tokens":60,"completion_tokens":5,"total_tokens":65}}`},
	)
	agentEngine(t, log, dir, map[string]string{"OPENAI_BASE_URL": ws.URL() + "/v1"})
	_, fin := runrig.RunJob(t, log, runrig.ParseJob(t, agentJob(t, `        provider: openai_compat
        model: qwen2.5-coder
        tools: [fs.write]
`, "")), nil)
	require.Equal(t, events.StateSuccess, fin.State, "%+v", fin.Error)
	out := fin.Output.(map[string]any)
	assert.Equal(t, "Wrote out.txt.", out["final_message"])
	assert.Equal(t, float64(100), out["usage"].(map[string]any)["input_tokens"])
	data, err := os.ReadFile(filepath.Join(dir, "out.txt"))
	require.NoError(t, err)
	assert.Equal(t, "made by a local model", string(data))
	assert.Contains(t, string(ws.Received()[1].Raw), `"tool_call_id":"call_1"`)
}

func TestAgentProviderFailures(t *testing.T) {
	t.Parallel()
	log := testkit.StartLog(t, events.Config{})
	cases := []struct {
		name      string
		reply     testkit.WireReply
		extra     string
		kind      string
		msg       string
		retryable bool
	}{
		{"an error status", testkit.WireReply{Status: 400, Body: `{"type":"error","error":{"type":"invalid_request_error","message":"max_tokens: too large"}}`},
			"", events.KindActivity, "HTTP 400: max_tokens: too large", false},
		{"a malformed body", testkit.WireReply{Body: `{"id":"msg_01","type":"message","content":[`}, "", events.KindActivity, "claude", false},
		{"the wall clock", testkit.WireReply{Delay: 30 * time.Second, Body: `{}`}, "        wall_clock_timeout_seconds: 1\n", events.KindTimeout, "wall-clock limit", true},
	}
	agentEngine(t, log, t.TempDir(), map[string]string{"ANTHROPIC_API_KEY": fakeKey})
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ws := testkit.NewWireServer(t, tc.reply)
			_, fin := runrig.RunJob(t, log, runrig.ParseJob(t, agentJob(t, `        provider: claude
        model: m
        base_url: `+ws.URL()+"\n"+tc.extra, "")), nil)
			require.Equal(t, events.StateFailed, fin.State)
			assert.Equal(t, tc.kind, fin.Error.Kind)
			assert.Contains(t, fin.Error.Message, tc.msg)
			assert.Equal(t, tc.retryable, fin.Error.Retryable)
			assert.NotContains(t, fin.Error.Message, fakeKey)
		})
	}
}

// writeFixture writes a replay fixture into dir.
func writeFixture(t *testing.T, dir, name, body string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	require.NoError(t, os.WriteFile(path, []byte(body), 0o644))
	return path
}

// TestDeniedToolFailsWithoutRetry: a denied fs.delete under tools:
// [fs.read] fails the step at once, however much retry the step has.
func TestDeniedToolFailsWithoutRetry(t *testing.T) {
	t.Parallel()
	log := testkit.StartLog(t, events.Config{})
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "keep.txt"), []byte("precious"), 0o644))
	fixture := writeFixture(t, t.TempDir(), "deny.json", `{"turns": [
	  {"content": [{"kind": "tool_use", "id": "t1", "name": "fs.delete", "input": {"path": "keep.txt"}}], "stop_reason": "tool_use"},
	  {"content": [{"kind": "text", "text": "never reached"}], "stop_reason": "end_turn"}
	]}`)
	agentEngine(t, log, dir, map[string]string{"ORBIT_REPLAY_FIXTURE": fixture})
	runID, fin := runrig.RunJob(t, log, runrig.ParseJob(t, agentJob(t, `        provider: claude
        tools: [fs.read]
`, "\n      retry: {max_attempts: 3, initial_backoff_ms: 10}")), nil)
	require.Equal(t, events.StateFailed, fin.State)
	assert.Equal(t, events.KindToolDenied, fin.Error.Kind)
	assert.False(t, fin.Error.Retryable)
	evs := runrig.History(t, log, runID)
	assert.Len(t, runrig.OfType(evs, events.StepStarted), 1, "no retry")
	assert.Empty(t, runrig.OfType(evs, events.StepRetryScheduled))
	denied := runrig.DecodeAll[events.ToolDeniedData](t, runrig.OfType(evs, events.ToolDenied))
	require.Len(t, denied, 1)
	assert.Equal(t, "fs.delete", denied[0].Name)
	assert.Equal(t, "terminate", denied[0].OnDenial)
	assert.Contains(t, denied[0].Reason, "not in this step's tools [fs.read]")
	data, err := os.ReadFile(filepath.Join(dir, "keep.txt"))
	require.NoError(t, err)
	assert.Equal(t, "precious", string(data))
	assert.Len(t, runrig.OfType(evs, events.AgentTurn), 1, "no turn after a terminating denial")
}

// TestReviewLoopWithASharedSession runs a two-iteration review loop whose
// agent step keeps one session: the second iteration's model sees the
// first iteration's conversation, and its final message breaks the loop.
func TestReviewLoopWithASharedSession(t *testing.T) {
	t.Parallel()
	log := testkit.StartLog(t, events.Config{})
	dir := t.TempDir()
	fixture := writeFixture(t, t.TempDir(), "review.json", `[
	  {"content": [{"kind": "text", "text": "Needs work: add tests."}], "stop_reason": "end_turn"},
	  {"content": [{"kind": "text", "text": "LGTM"}], "stop_reason": "end_turn"},
	  {"content": [{"kind": "text", "text": "never reached"}], "stop_reason": "end_turn"}
	]`)
	agentEngine(t, log, dir, map[string]string{"ORBIT_REPLAY_FIXTURE": fixture})
	runID, fin := runrig.RunYAML(t, log, `
schemaVersion: 2
kind: Job
metadata: {name: review}
spec:
  steps:
    - id: review_fix
      loop:
        max_iterations: 5
        break_when: "{{ steps.review.output.final_message }} == LGTM"
        steps:
          - id: review
            session: reviewer
            default_input: {prompt: "Review round {{ iteration }}."}
            spec: {type: agent_loop, provider: claude, instruction: Review the change.}
`)
	require.Equal(t, events.StateSuccess, fin.State, "%+v", fin.Error)
	evs := runrig.History(t, log, runID)
	assert.Len(t, runrig.OfType(evs, events.LoopIteration), 2)
	sessions := runrig.DecodeAll[events.AgentSessionData](t, runrig.OfType(evs, events.AgentSession))
	require.Len(t, sessions, 2)
	assert.Equal(t, "reviewer", sessions[1].Session)
	assert.Equal(t, 2, sessions[0].Messages)
	assert.Equal(t, 4, sessions[1].Messages, "iteration 2 continued iteration 1's conversation")
	blob, err := log.GetBlob(testkit.Context(t), sessions[1].Transcript.Digest)
	require.NoError(t, err)
	for _, want := range []string{"Review round 1.", "Needs work: add tests.", "Review round 2.", "LGTM"} {
		assert.Contains(t, string(blob), want)
	}
}

// runPastAPause runs job on an agent engine until its step pause has
// been dispatched, stops that engine, records the pause as finished (a
// new engine's pause would take a minute: as if it had ended just before
// the restart) and lets a new engine resume the run; it returns the run's
// end.
func runPastAPause(t *testing.T, log *events.Log, dir string, env map[string]string, job *assets.Job) events.RunFinishedData {
	t.Helper()
	first := agentEngine(t, log, dir, env)
	runID := runrig.Submit(t, log, job, nil)
	runrig.WaitFor(t, "the pause to be dispatched", func() bool { return runrig.Has(t, log, runID, events.StepStarted, "pause") })
	first.Stop()
	_, err := log.Append(testkit.Context(t), events.Event{ID: events.DecisionID(events.StepFinished, runID, "pause", "1"), Type: events.StepFinished,
		RunID: runID, Job: job.Name, StepKey: "pause"}, events.StepFinishedData{Attempt: 1, State: events.StateSuccess})
	require.NoError(t, err)
	agentEngine(t, log, dir, env, runID)
	return runrig.WaitFinished(t, log, runID)
}

// TestSessionSurvivesARestart: the second step of a session runs on a new
// engine, which has nothing in memory, and still sends the provider the
// first step's conversation.
func TestSessionSurvivesARestart(t *testing.T) {
	t.Parallel()
	log := testkit.StartLog(t, events.Config{})
	dir := t.TempDir()
	ws := testkit.NewWireServer(t,
		claudeTurn("end_turn", 10, 5, textBlock("First answer.")),
		claudeTurn("end_turn", 20, 5, textBlock("Second answer.")),
	)
	job := runrig.ParseJob(t, `
schemaVersion: 2
kind: Job
metadata: {name: two_turns}
spec:
  steps:
    - id: ask
      session: chat
      default_input: {prompt: "First question."}
      spec: {type: agent_loop, provider: claude, model: m, base_url: "`+ws.URL()+`"}
    - id: pause
      spec: {type: deterministic, action: sleep, config: {ms: 60000}}
    - id: again
      session: chat
      default_input: {prompt: "Second question."}
      spec: {type: agent_loop, provider: claude, model: m, base_url: "`+ws.URL()+`"}
`)
	fin := runPastAPause(t, log, dir, map[string]string{"ANTHROPIC_API_KEY": fakeKey}, job)
	require.Equal(t, events.StateSuccess, fin.State, "%+v", fin.Error)
	reqs := ws.Received()
	require.Len(t, reqs, 2)
	second := string(reqs[1].Raw)
	for _, want := range []string{"First question.", "First answer.", "Second question."} {
		assert.Contains(t, second, want, "the restarted engine sent the session's history")
	}
}

// TestReplayPositionComesFromTheLog: a fixture's turns are consumed in
// order across the steps of a run, and a new engine (nothing in memory)
// continues where the finished steps left the script.
func TestReplayPositionComesFromTheLog(t *testing.T) {
	t.Parallel()
	log := testkit.StartLog(t, events.Config{})
	dir := t.TempDir()
	fixture := writeFixture(t, t.TempDir(), "script.json", `[
	  {"content": [{"kind": "text", "text": "one"}], "stop_reason": "end_turn"},
	  {"content": [{"kind": "text", "text": "two"}], "stop_reason": "end_turn"},
	  {"content": [{"kind": "text", "text": "three"}], "stop_reason": "end_turn"}
	]`)
	job := runrig.ParseJob(t, `
schemaVersion: 2
kind: Job
metadata: {name: scripted}
spec:
  steps:
    - id: a
      spec: {type: agent_loop, provider: claude}
    - id: pause
      spec: {type: deterministic, action: sleep, config: {ms: 60000}}
    - id: b
      spec: {type: agent_loop, provider: claude}
    - id: c
      spec: {type: agent_loop, provider: claude}
    - id: report
      spec: {type: deterministic, action: echo, config: {said: "{{ steps.a.output.final_message }} {{ steps.b.output.final_message }} {{ steps.c.output.final_message }}"}}
`)
	fin := runPastAPause(t, log, dir, map[string]string{"ORBIT_REPLAY_FIXTURE": fixture}, job)
	require.Equal(t, events.StateSuccess, fin.State, "%+v", fin.Error)
	assert.Equal(t, "one two three", fin.Output.(map[string]any)["said"])
}

// TestDenialOverTheWireContinues: with on_denial continue, a denied call
// goes back to the model as an error result and the session goes on.
func TestDenialOverTheWireContinues(t *testing.T) {
	t.Parallel()
	log := testkit.StartLog(t, events.Config{})
	dir := t.TempDir()
	ws := testkit.NewWireServer(t,
		claudeTurn("tool_use", 10, 5, toolUse("toolu_1", "fs_read", `{"path":"../outside.txt"}`)),
		claudeTurn("end_turn", 10, 5, textBlock("I may not read that.")),
	)
	agentEngine(t, log, dir, map[string]string{"ANTHROPIC_API_KEY": fakeKey})
	runID, fin := runrig.RunJob(t, log, runrig.ParseJob(t, agentJob(t, `        provider: claude
        model: m
        base_url: `+ws.URL()+`
        tools: [fs.read]
        on_denial: continue
`, "")), nil)
	require.Equal(t, events.StateSuccess, fin.State, "%+v", fin.Error)
	assert.Equal(t, "I may not read that.", fin.Output.(map[string]any)["final_message"])
	denied := runrig.DecodeAll[events.ToolDeniedData](t, runrig.OfType(runrig.History(t, log, runID), events.ToolDenied))
	require.Len(t, denied, 1)
	assert.Equal(t, "continue", denied[0].OnDenial)
	assert.Contains(t, denied[0].Reason, "outside the workspace")
	second := string(ws.Received()[1].Raw)
	assert.Contains(t, second, `"is_error":true`)
	assert.Contains(t, second, "denied: outside the workspace")
}
