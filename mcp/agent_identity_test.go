package mcp_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/engine"
	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/groundhog"
	"github.com/orbitrun/orbit/internal/testkit"
)

// TestTheAgentIdentityCanSendItsAttemptsVerbsOnly: signed in as the agent
// identity, as an engine's CLI agents are, `orbit groundhog side-effect`
// reaches the open attempt with its token and is refused without one (the
// endpoint still checks the token); a plain connection with the same seed
// is refused by the server whatever else it asks the engine: to submit a
// run, approve or rewind a held Groundhog commit, cancel a run, read the
// log or append to it.
func TestTheAgentIdentityCanSendItsAttemptsVerbsOnly(t *testing.T) {
	t.Parallel()
	l := startLive(t)
	s := l.dayOne()
	seed := events.CredsFile(engine.CredsDir(l.p.Root), events.IdentityAgent)
	asAgent := func(token string, args ...string) testkit.Result {
		cmd := l.p.Command(args...)
		cmd.Dir = t.TempDir()
		cmd.Env = append(cmd.Env, l.env(token)...)
		cmd.Env = append(cmd.Env, "ORBIT_NKEY="+seed)
		var out, errb strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &errb
		_ = cmd.Run()
		return testkit.Result{Stdout: out.String(), Stderr: errb.String(), Code: cmd.ProcessState.ExitCode()}
	}

	got := session(t, s, 1)
	r := asAgent(s.Token, "groundhog", "side-effect", "--kind", "other", "--target", "x")
	require.Equal(t, 0, r.Code, r.String())
	require.Equal(t, []received{{verb: groundhog.VerbSideEffect, input: map[string]any{"kind": "other", "target": "x", "reversible": true}}}, <-got)
	r = asAgent("", "groundhog", "success", "--summary", "done")
	require.Equal(t, 1, r.Code, r.String())
	assert.Contains(t, r.Stderr, "refused: "+groundhog.ErrTokenMissing.Error())
	require.Len(t, l.refusals(), 1)
	r = asAgent(s.Token, "run", "list")
	assert.NotEqual(t, 0, r.Code, "the agent identity listed runs: %s", r)

	o, err := testkit.DialOutsider(t, l.url, seed)
	require.NoError(t, err)
	id := l.e.Info().Engine
	body, err := json.Marshal(map[string]any{"task_id": l.task, "run_id": "x"})
	require.NoError(t, err)
	for _, subject := range []string{
		events.EngineSubject(id, "runs.submit"),
		events.EngineSubject(id, "runs.cancel"),
		events.EngineSubject(id, engine.EndpointGroundhogApprove),
		events.EngineSubject(id, engine.EndpointGroundhogRewind),
		events.EngineSubject(id, engine.EndpointGroundhogAbandon),
		events.APISubject("runs.submit"),
		"$JS.API.STREAM.INFO." + events.EventsStream,
		"$JS.API.CONSUMER.CREATE." + events.EventsStream,
		events.EventSubject(events.AggregateTask, l.task, events.GroundhogVerbRefused),
	} {
		_, refused := o.Ask(&nats.Msg{Subject: subject, Data: body})
		assert.True(t, refused, "%s must be refused to the agent identity", subject)
	}
}
