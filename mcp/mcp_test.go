package mcp_test

import (
	"encoding/hex"
	"encoding/json"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/groundhog"
	"github.com/orbitrun/orbit/internal/testkit"
	"github.com/orbitrun/orbit/mcp"
)

// received is a verb as the attempt's session got it.
type received struct {
	verb  string
	input map[string]any
}

// session stands for the attempt's waiting session: it takes n verbs from
// the scope, answers each, and reports them.
func session(t *testing.T, s *groundhog.Scope, n int) <-chan []received {
	out := make(chan []received, 1)
	go func() {
		var got []received
		for len(got) < n {
			select {
			case c := <-s.Calls():
				var in map[string]any
				if err := json.Unmarshal(c.Input, &in); err != nil {
					c.Answer("", err)
					continue
				}
				got = append(got, received{verb: c.Verb, input: in})
				c.Answer("Recorded.", nil)
			case <-time.After(time.Minute):
				out <- got
				return
			}
		}
		out <- got
	}()
	return out
}

// TestMCPServerOffersTheVerbs: the server started from the binary lists
// the three verbs with the builtin verbs' descriptions and schemas.
func TestMCPServerOffersTheVerbs(t *testing.T) {
	t.Parallel()
	l := startLive(t)
	cs := l.client("")
	res, err := cs.ListTools(testkit.Context(t), nil)
	require.NoError(t, err)
	got := map[string]*sdk.Tool{}
	for _, tool := range res.Tools {
		got[tool.Name] = tool
	}
	require.Len(t, got, 3)
	names := map[string]string{groundhog.VerbSuccess: mcp.ToolSuccess, groundhog.VerbFailure: mcp.ToolFailure, groundhog.VerbSideEffect: mcp.ToolSideEffect}
	for _, spec := range groundhog.VerbSpecs() {
		tool := got[names[spec.Name]]
		require.NotNil(t, tool, spec.Name)
		require.Equal(t, spec.Description, tool.Description)
		schema, err := json.Marshal(tool.InputSchema)
		require.NoError(t, err)
		require.JSONEq(t, string(spec.InputSchema), string(schema))
	}
}

// TestMCPVerbsReachTheAttempt: with the token of an open attempt, a side
// effect and the terminal verb are handed to the attempt's session, which
// answers them; the agent sees the session's answer.
func TestMCPVerbsReachTheAttempt(t *testing.T) {
	t.Parallel()
	l := startLive(t)
	s := l.dayOne()
	got := session(t, s, 2)
	cs := l.client(s.Token)

	text, isErr := call(t, cs, mcp.ToolSideEffect, map[string]any{"kind": "db_mutation", "target": "users", "reversible": false})
	require.False(t, isErr, text)
	require.Equal(t, "Recorded.", text)
	text, isErr = call(t, cs, mcp.ToolSuccess, map[string]any{"summary": "added one.txt"})
	require.False(t, isErr, text)

	calls := <-got
	require.Equal(t, []received{
		{verb: groundhog.VerbSideEffect, input: map[string]any{"kind": "db_mutation", "target": "users", "reversible": false}},
		{verb: groundhog.VerbSuccess, input: map[string]any{"summary": "added one.txt"}},
	}, calls)
	require.Empty(t, l.refusals())

	// The token is a secret of the engine's: whatever echoes it, the log
	// holds it redacted.
	_, err := l.e.Log().Append(testkit.Context(t), events.Event{Type: events.GroundhogVerbRefused, TaskID: l.task},
		events.GroundhogVerbRefusedData{Verb: "echo", Reason: "the agent printed " + s.Token})
	require.NoError(t, err)
	require.NotContains(t, l.rawRefusals(), s.Token)
}

// TestMCPRefusesOutOfScopeTokens: a verb with no token, the token of a
// closed attempt, a token the engine never issued, or the token of
// another task's attempt is refused — a tool error the agent sees — and
// recorded under the task with the reason, never the token; the open
// attempt's session gets none of them.
func TestMCPRefusesOutOfScopeTokens(t *testing.T) {
	t.Parallel()
	l := startLive(t)
	open := l.register(l.task, events.Attempt{Checkpoint: "one", Attempt: 2, Day: 2})
	closed := l.dayOne()
	l.e.Attempts().Unregister(closed)
	other := l.register("another-task", events.Attempt{Checkpoint: "one", Attempt: 1, Day: 1})

	cases := []struct {
		name, token, reason string
	}{
		{"missing", "", groundhog.ErrTokenMissing.Error()},
		{"stale", closed.Token, groundhog.ErrTokenStale.Error()},
		{"forged", hex.EncodeToString(make([]byte, 32)), groundhog.ErrTokenForeign.Error()},
		{"another task's", other.Token, groundhog.ErrTokenForeign.Error()},
	}
	var want []events.VerbRefusal
	for _, tc := range cases {
		cs := l.client(tc.token)
		text, isErr := call(t, cs, mcp.ToolSuccess, map[string]any{"summary": "done"})
		require.True(t, isErr, "%s: %s", tc.name, text)
		require.Equal(t, "refused: "+tc.reason, text, tc.name)
		want = append(want, events.VerbRefusal{Verb: groundhog.VerbSuccess, Reason: tc.reason, By: "orbit mcp"})
	}
	// Recorded coalesced: each as it came, or counted with those of its
	// window, the first and last of which are on record.
	var got []events.VerbRefusal
	for _, r := range l.settledRefusals(len(cases)) {
		got = append(got, events.VerbRefusal{Verb: r.Verb, Reason: r.Reason, By: r.By})
		if r.Count > 1 {
			got = append(got, make([]events.VerbRefusal, r.Count-2)...) // counted, not on record
			last := *r.Last
			last.Signer = nil
			got = append(got, last)
		}
	}
	require.Len(t, got, len(want))
	for i := range want {
		if got[i] != (events.VerbRefusal{}) {
			require.Equal(t, want[i], got[i], "refusal %d", i)
		}
	}
	for _, r := range l.settledRefusals(len(cases)) {
		require.NotNil(t, r.Signer, "a refusal records who signed the verb")
		require.Equal(t, events.IdentityClient, r.Signer.Identity)
	}
	raw := l.rawRefusals()
	for _, tok := range []string{closed.Token, other.Token, open.Token} {
		require.False(t, strings.Contains(raw, tok), "a token reached the log: %s", raw)
	}
	select {
	case c := <-open.Calls():
		t.Fatalf("a refused verb reached the open attempt: %s", c.Verb)
	default:
	}
}
