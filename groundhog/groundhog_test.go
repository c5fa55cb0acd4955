package groundhog_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/agent"
	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/internal/testkit"
)

const twoCheckpoints = `
checkpoints:
  - id: greeting
    spec: Create greet.txt saying hello.
    success_criteria:
      - {kind: file_exists, path: greet.txt}
      - {kind: file_contains, path: greet.txt, pattern: "hello"}
      - {kind: command, command: "test -s greet.txt"}
  - id: farewell
    spec: Create bye.txt saying goodbye, without touching greet.txt.
    success_criteria:
      - {kind: file_contains, path: bye.txt, pattern: "goodbye"}
      - {kind: semantic, statement: the farewell is polite}
    anti_criteria:
      - {kind: paths_untouched, paths: [greet.txt]}
`

// claudeTurn is a Messages API response calling tools (wire names).
func claudeTurn(calls ...string) testkit.WireReply {
	return testkit.WireReply{Body: `{"id":"msg","type":"message","role":"assistant","model":"claude-test","content":[` +
		strings.Join(calls, ",") + `],"stop_reason":"tool_use","stop_sequence":null,"usage":{"input_tokens":10,"output_tokens":5}}`}
}

func toolUse(id, name, input string) string {
	return `{"type":"tool_use","id":"` + id + `","name":"` + name + `","input":` + input + `}`
}

// TestTwoCheckpointsWithARewind is the story of DESIGN §5: checkpoint 1
// succeeds first time; checkpoint 2's first attempt claims success but the
// verifier refutes it, so it is rewound — the bad edit gone from the task
// branch, kept on the scratch branch — and the second attempt, whose prompt
// carries the failure report and checkpoint 1's summary and side effects
// but nothing of attempt 1's conversation, succeeds. Two squash commits.
func TestTwoCheckpointsWithARewind(t *testing.T) {
	t.Parallel()
	h := newHarness(t, map[string]string{"README.md": "# demo\n", "notes.txt": "untracked? no, tracked\n"}, twoCheckpoints)
	ws := testkit.NewWireServer(t,
		claudeTurn(
			toolUse("t1", "fs_write", `{"path":"greet.txt","content":"hello world\n"}`),
			toolUse("t2", "orbit_groundhog_checkpoint_success", `{"summary":"Add greet.txt with a hello","side_effects":[{"kind":"file_write","target":"greet.txt","reversible":true}]}`)),
		claudeTurn(
			toolUse("t3", "fs_write", `{"path":"bye.txt","content":"see you SECRET-ATTEMPT-ONE-WORDS\n"}`),
			toolUse("t4", "orbit_groundhog_checkpoint_success", `{"summary":"Add bye.txt"}`)),
		claudeTurn(
			toolUse("t5", "fs_write", `{"path":"bye.txt","content":"goodbye\n"}`),
			toolUse("t6", "orbit_groundhog_checkpoint_success", `{"summary":"Add bye.txt saying goodbye"}`)),
	)
	res, err := h.run("R1", spec("fs.read", "fs.write"), func(int, func(string) int) (agent.Provider, error) {
		return agent.NewProvider(agent.ProviderOptions{Name: "claude", BaseURL: ws.URL(), APIKey: "test-key"})
	})
	require.NoError(t, err)
	assert.Equal(t, events.GroundhogDone, res.State, res.Message)
	assert.Equal(t, 2, res.Committed)

	// Two squash commits on the task branch, in order, with their trailers.
	log := h.git("log", "--format=%s", "main")
	assert.Equal(t, "Add bye.txt saying goodbye\nAdd greet.txt with a hello\ninitial", log)
	assert.Equal(t, "goodbye", h.git("show", "main:bye.txt"))
	assert.Contains(t, h.git("log", "-1", "--format=%B", "main"), "Groundhog-Checkpoint: farewell")
	assert.Equal(t, "main", h.git("branch", "--show-current"))
	assert.Empty(t, h.git("status", "--porcelain"))

	// The rewound attempt's bad edit is on its kept scratch branch only.
	rw := onlyEvent[events.GroundhogRewoundData](t, h, events.GroundhogRewound)
	assert.Equal(t, "groundhog/T-1/day-2", rw.ScratchBranch)
	assert.Contains(t, h.git("show", rw.ScratchBranch+":bye.txt"), "see you")
	assert.NotContains(t, h.git("log", "-p", "main"), "see you")

	// What the attempts' agents were told.
	reqs := ws.Received()
	require.Len(t, reqs, 3)
	prompt := func(i int) string {
		msgs := reqs[i].Body["messages"].([]any)
		first := msgs[0].(map[string]any)["content"].([]any)[0].(map[string]any)
		return first["text"].(string)
	}
	third := prompt(2)
	assert.Contains(t, third, "Add greet.txt with a hello", "checkpoint 1's summary")
	assert.Contains(t, third, "file_write greet.txt", "checkpoint 1's side effects")
	assert.Contains(t, third, "bye.txt does not match /goodbye/", "the failure report")
	assert.NotContains(t, string(reqs[2].Raw), "SECRET-ATTEMPT-ONE-WORDS", "nothing from attempt 1's conversation")
	assert.Len(t, reqs[2].Body["messages"].([]any), 1, "a fresh session")
	// The tools offered include the three verbs.
	var names []string
	for _, tool := range reqs[0].Body["tools"].([]any) {
		names = append(names, tool.(map[string]any)["name"].(string))
	}
	assert.Subset(t, names, []string{"orbit_groundhog_checkpoint_success", "orbit_groundhog_checkpoint_failure", "orbit_groundhog_side_effect", "fs_write", "fs_read"})

	// Every verifier run is on record, pass and fail.
	var verdicts []bool
	for _, ev := range h.events(events.GroundhogVerification) {
		var v events.GroundhogVerificationData
		require.NoError(t, ev.Decode(&v))
		verdicts = append(verdicts, v.Passed)
		if !v.Passed {
			assert.Equal(t, "skipped", v.Results[1].Outcome, "semantic criteria are left to the agent")
		}
	}
	assert.Equal(t, []bool{true, false, true}, verdicts)
	rep := h.verify()
	assert.True(t, rep.OK, "%+v", rep.Checks)
	assert.Equal(t, 2, rep.Commits)
}

func TestTouchingAProtectedPathFailsVerification(t *testing.T) {
	t.Parallel()
	h := newHarness(t, map[string]string{"greet.txt": "hello\n"}, `
checkpoints:
  - id: farewell
    spec: Create bye.txt.
    attempt_budget: 1
    success_criteria:
      - {kind: file_exists, path: bye.txt}
    anti_criteria:
      - {kind: paths_untouched, paths: ["greet*"]}
`)
	res, err := h.run("R1", spec("fs.write"), replay(t, fixture(`{"content": [
	  {"kind": "tool_use", "name": "fs.write", "input": {"path": "greet.txt", "content": "changed\n"}},
	  {"kind": "tool_use", "name": "fs.write", "input": {"path": "bye.txt", "content": "bye\n"}},
	  {"kind": "tool_use", "name": "orbit.groundhog.checkpoint_success", "input": {"summary": "bye"}}], "stop_reason": "tool_use"}`)))
	require.NoError(t, err)
	assert.Equal(t, events.GroundhogBlocked, res.State, "a budget of one, spent")
	var v events.GroundhogVerificationData
	require.NoError(t, h.events(events.GroundhogVerification)[0].Decode(&v))
	assert.False(t, v.Passed)
	assert.Equal(t, "fail", v.Results[1].Outcome)
	assert.Contains(t, v.Results[1].Detail, "changed greet.txt")
	assert.Equal(t, "hello", h.git("show", "main:greet.txt"))
	assert.Equal(t, "hello\n", mustRead(t, h.repo+"/greet.txt"), "rewound")
	assert.Len(t, h.events(events.GroundhogAbandoned), 1)
	var status events.TaskStatusChangedData
	st := h.events(events.TaskStatusChanged)
	require.NoError(t, st[len(st)-1].Decode(&status))
	assert.Equal(t, events.TaskBlocked, status.Status)
	assert.True(t, h.verify().OK)
}

// TestExhaustedBudgetBlocksTheTask: attempts that end without a verdict, or
// with checkpoint_failure, are rewound until the budget (the activity's
// default, 2, here) is spent.
func TestExhaustedBudgetBlocksTheTask(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil, `
checkpoints:
  - id: impossible
    spec: Do the impossible.
    success_criteria:
      - {kind: file_exists, path: done.txt}
`)
	res, err := h.run("R1", spec("fs.write"), replay(t, fixture(
		`{"content": [{"kind": "text", "text": "I give up without a word."}], "stop_reason": "end_turn"}`,
		`{"content": [{"kind": "tool_use", "name": "orbit.groundhog.checkpoint_failure", "input": {"what_tried": "everything", "what_happened": "it is impossible", "next_attempt_plan": "none"}}], "stop_reason": "tool_use"}`,
	)))
	require.NoError(t, err)
	assert.Equal(t, events.GroundhogBlocked, res.State)
	var reports []string
	for _, ev := range h.events(events.GroundhogAttemptFailed) {
		var d events.GroundhogAttemptFailedData
		require.NoError(t, ev.Decode(&d))
		reports = append(reports, d.Report.Source)
	}
	assert.Equal(t, []string{"synthetic", "agent"}, reports)
	assert.Len(t, h.events(events.GroundhogRewound), 2)
	assert.Equal(t, "initial", h.git("log", "--format=%s", "main"))
	mem, err := h.memory(h.ctx, h.task, 0)
	require.NoError(t, err)
	require.NotNil(t, mem.Active)
	assert.Equal(t, "it is impossible", mem.Active.LastFailure.WhatHappened)
}
