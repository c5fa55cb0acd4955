package agent_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/agent"
)

const editFixture = "testdata/fixtures/edit-file.json"

func replayOf(t *testing.T, fixture string, start int) agent.Provider {
	t.Helper()
	p, err := agent.NewProvider(agent.ProviderOptions{Name: agent.ProviderReplay, Fixture: fixture, Start: start, Env: wireEnv(nil)})
	require.NoError(t, err)
	return p
}

// replayAnswer returns the request that follows resp in a session: the turn
// itself, then a result for each of its tool calls.
func replayAnswer(req *agent.Request, resp *agent.Response) *agent.Request {
	next := *req
	next.Messages = append(append([]agent.Message(nil), req.Messages...), agent.Message{Role: agent.RoleAssistant, Content: resp.Content})
	var results []agent.Block
	for _, b := range resp.Content {
		if b.Kind == agent.BlockToolUse {
			results = append(results, agent.Block{Kind: agent.BlockToolResult, ToolUseID: b.ID, Text: "ok"})
		}
	}
	if len(results) > 0 {
		next.Messages = append(next.Messages, agent.Message{Role: agent.RoleUser, Content: results})
	}
	return &next
}

func replayPosition(t *testing.T, p agent.Provider) (string, int) {
	t.Helper()
	pos, ok := p.(agent.Positioner)
	require.True(t, ok, "the replay provider says where it is in its script")
	return pos.Position()
}

func TestReplayTurnsInOrder(t *testing.T) {
	t.Parallel()
	p := replayOf(t, editFixture, 0)
	assert.Equal(t, "replay", p.Name())
	ctx := context.Background()
	req := &agent.Request{Model: "ignored", Messages: []agent.Message{wireUser("Greet the world.")}}

	var stops []string
	var names []string
	var usage agent.Usage
	for turn := range 3 {
		file, next := replayPosition(t, p)
		assert.Equal(t, editFixture, file)
		assert.Equal(t, turn, next)

		resp, err := p.Complete(ctx, req)
		require.NoError(t, err, "turn %d", turn)
		assert.Equal(t, "claude-sonnet-4-5", resp.Model)
		stops = append(stops, resp.StopReason)
		usage = usage.Add(resp.Usage)
		for _, b := range resp.Content {
			if b.Kind == agent.BlockToolUse {
				names = append(names, b.Name)
			}
		}
		req = replayAnswer(req, resp)
	}
	assert.Equal(t, []string{agent.StopToolUse, agent.StopToolUse, agent.StopEndTurn}, stops)
	assert.Equal(t, []string{"fs.read", "fs.edit", "fs.read"}, names)
	assert.Equal(t, agent.Usage{InputTokens: 1360, OutputTokens: 115, CacheReadTokens: 2200, CacheWriteTokens: 1100}, usage)

	_, next := replayPosition(t, p)
	assert.Equal(t, 3, next)
	_, err := p.Complete(ctx, req)
	require.ErrorIs(t, err, agent.ErrFixture)
	assert.EqualError(t, err, "replay: testdata/fixtures/edit-file.json: turn 3 was asked for, but the fixture has 3 turns")
}

func TestReplayStart(t *testing.T) {
	t.Parallel()
	// A rerun of a step whose earlier attempt consumed two turns: its
	// session starts afresh, so turn 1's calls are not in its transcript.
	p := replayOf(t, editFixture, 2)
	_, next := replayPosition(t, p)
	assert.Equal(t, 2, next)
	resp, err := p.Complete(context.Background(), &agent.Request{Messages: []agent.Message{wireUser("Greet the world.")}})
	require.NoError(t, err)
	assert.Equal(t, []agent.Block{{Kind: agent.BlockText, Text: `greeting.txt now says "Hello, world".`}}, resp.Content)

	// From the first turn it gives on, the check applies.
	p = replayOf(t, editFixture, 1)
	req := &agent.Request{Messages: []agent.Message{wireUser("Greet the world.")}}
	resp, err = p.Complete(context.Background(), req)
	require.NoError(t, err)
	_, err = p.Complete(context.Background(), req)
	require.ErrorIs(t, err, agent.ErrFixture)
	_, err = p.Complete(context.Background(), replayAnswer(req, resp))
	require.NoError(t, err)

	// Starting past the end fails on the first call.
	p = replayOf(t, editFixture, 7)
	_, err = p.Complete(context.Background(), &agent.Request{})
	require.ErrorIs(t, err, agent.ErrFixture)
	assert.EqualError(t, err, "replay: testdata/fixtures/edit-file.json: turn 7 was asked for, but the fixture has 3 turns")
}

func TestReplayNeedsToolResults(t *testing.T) {
	t.Parallel()
	p := replayOf(t, editFixture, 0)
	ctx := context.Background()
	first := &agent.Request{Messages: []agent.Message{wireUser("Greet the world.")}}
	resp, err := p.Complete(ctx, first)
	require.NoError(t, err)

	// The engine asks again without answering the call.
	req := replayAnswer(first, resp)
	unanswered := *req
	unanswered.Messages = unanswered.Messages[:len(unanswered.Messages)-1]
	_, err = p.Complete(ctx, &unanswered)
	require.ErrorIs(t, err, agent.ErrFixture)
	assert.EqualError(t, err, "replay: testdata/fixtures/edit-file.json: turn 1: the request has no tool_result for turn 0's tool_use toolu_read (fs.read)")

	// A result from before the model's last turn does not count.
	stale := *req
	stale.Messages = append(append([]agent.Message(nil), req.Messages...),
		agent.Message{Role: agent.RoleAssistant, Content: []agent.Block{{Kind: agent.BlockText, Text: "thinking aloud"}}})
	_, err = p.Complete(ctx, &stale)
	require.ErrorIs(t, err, agent.ErrFixture)

	// The failed calls consumed nothing.
	_, next := replayPosition(t, p)
	assert.Equal(t, 1, next)
	resp, err = p.Complete(ctx, req)
	require.NoError(t, err)
	assert.Equal(t, "fs.edit", resp.Content[0].Name)

	// Both calls of a turn must be answered.
	req = replayAnswer(req, resp)
	results := req.Messages[len(req.Messages)-1]
	results.Content = results.Content[:1]
	req.Messages[len(req.Messages)-1] = results
	_, err = p.Complete(ctx, req)
	assert.EqualError(t, err, "replay: testdata/fixtures/edit-file.json: turn 2: the request has no tool_result for turn 1's tool_use toolu_replay_1_1 (fs.read)")
}

func TestReplayBareArray(t *testing.T) {
	t.Parallel()
	p := replayOf(t, "testdata/fixtures/bare-array.json", 0)
	req := &agent.Request{Messages: []agent.Message{wireUser("Run the tests.")}}
	resp, err := p.Complete(context.Background(), req)
	require.NoError(t, err)
	assert.Equal(t, &agent.Response{
		Content:    []agent.Block{{Kind: agent.BlockToolUse, ID: "toolu_replay_0_0", Name: "shell.exec", Input: json.RawMessage(`{"program":"go","args":["test","./..."]}`)}},
		StopReason: agent.StopToolUse,
		Model:      "replay",
	}, resp)
	resp, err = p.Complete(context.Background(), replayAnswer(req, resp))
	require.NoError(t, err)
	assert.Equal(t, agent.StopEndTurn, resp.StopReason)
	assert.Equal(t, agent.Usage{}, resp.Usage)
}

func TestReplayReturnsCopies(t *testing.T) {
	t.Parallel()
	fx, err := agent.LoadFixture(editFixture)
	require.NoError(t, err)
	p, err := agent.NewReplayProvider(fx, 0)
	require.NoError(t, err)
	resp, err := p.Complete(context.Background(), &agent.Request{})
	require.NoError(t, err)
	resp.Content[0].Text = "changed"
	resp.Content[1].Input[2] = 'X'
	assert.Equal(t, "Let me look at the file first.", fx.Turns[0].Content[0].Text)
	assert.JSONEq(t, `{"path":"greeting.txt"}`, string(fx.Turns[0].Content[1].Input))
}

func TestReplayOptions(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile(editFixture)
	require.NoError(t, err)

	// The fixture's content, named by Fixture (a seeded fixture).
	p, err := agent.NewProvider(agent.ProviderOptions{Name: "replay", Fixture: "seeded:edit-file.json", FixtureData: data, Start: 2, Env: wireEnv(nil)})
	require.NoError(t, err)
	file, next := replayPosition(t, p)
	assert.Equal(t, "seeded:edit-file.json", file)
	assert.Equal(t, 2, next)

	_, err = agent.NewProvider(agent.ProviderOptions{Name: "replay", Fixture: "seeded:bad.json", FixtureData: []byte(`[{"content": [{"kind": "tool_use"}]}]`), Env: wireEnv(nil)})
	require.ErrorIs(t, err, agent.ErrFixture)
	assert.EqualError(t, err, "seeded:bad.json: turns[0].content[0]: tool_use needs a name")

	// The file from the environment, the newer name first.
	p, err = agent.NewProvider(agent.ProviderOptions{Name: "replay", Env: wireEnv(map[string]string{
		"ORBIT_REPLAY_FIXTURE":    editFixture,
		"ORBIT_V2_REPLAY_FIXTURE": "testdata/fixtures/bare-array.json",
	})})
	require.NoError(t, err)
	file, _ = replayPosition(t, p)
	assert.Equal(t, editFixture, file)
	p, err = agent.NewProvider(agent.ProviderOptions{Name: "replay", Env: wireEnv(map[string]string{
		"ORBIT_V2_REPLAY_FIXTURE": "testdata/fixtures/bare-array.json",
	})})
	require.NoError(t, err)
	file, _ = replayPosition(t, p)
	assert.Equal(t, "testdata/fixtures/bare-array.json", file)

	_, err = agent.NewProvider(agent.ProviderOptions{Name: "replay", Env: wireEnv(nil)})
	require.ErrorIs(t, err, agent.ErrFixture)
	assert.EqualError(t, err, "replay needs a fixture file (set ORBIT_REPLAY_FIXTURE)")

	missing := filepath.Join(t.TempDir(), "missing.json")
	_, err = agent.NewProvider(agent.ProviderOptions{Name: "replay", Fixture: missing, Env: wireEnv(nil)})
	require.ErrorIs(t, err, agent.ErrFixture)

	_, err = agent.NewProvider(agent.ProviderOptions{Name: "replay", Fixture: editFixture, Start: -1, Env: wireEnv(nil)})
	require.ErrorIs(t, err, agent.ErrFixture)
	assert.EqualError(t, err, "start turn -1 is negative")
}

func TestReplayCancelled(t *testing.T) {
	t.Parallel()
	p := replayOf(t, editFixture, 0)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := p.Complete(ctx, &agent.Request{})
	require.ErrorIs(t, err, context.Canceled)
	_, next := replayPosition(t, p)
	assert.Equal(t, 0, next)
}
