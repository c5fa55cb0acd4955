package main_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/engine"
	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/internal/testkit"
)

// TestAnEngineSaysWhenTheServerRefusesTheAgentIdentity: on an external
// server configured before the agent identity existed (engine, client and
// reader only), the engine warns at start that CLI agents cannot send
// their verbs and names orbit nats-config; on one configured with what
// orbit nats-config prints now, it does not.
func TestAnEngineSaysWhenTheServerRefusesTheAgentIdentity(t *testing.T) {
	t.Parallel()
	for name, withAgent := range map[string]bool{"an old configuration": false, "nats-config's": true} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			p := testkit.NewProject(t)
			creds, err := events.EnsureCreds(engine.CredsDir(p.Root))
			require.NoError(t, err)
			block := events.AccountsBlock(creds)
			if !withAgent {
				block = "authorization { users = [\n"
				for _, id := range []events.Identity{events.IdentityEngine, events.IdentityClient, events.IdentityReader} {
					block += "{nkey: " + creds.Public[id] + "}\n"
				}
				block += "] }\n"
			}
			stderr := serveOnExternalServer(t, p, block)
			const warning = "does not admit the agent identity"
			if withAgent {
				assert.NotContains(t, stderr.String(), warning)
				return
			}
			assert.Contains(t, stderr.String(), warning)
			assert.Contains(t, stderr.String(), "orbit nats-config")
		})
	}
}

// TestTheOfficialNATSCLIAsTheAgent: signed in with the agent identity's
// seed and inbox, the official nats CLI is refused by the engine's server
// whatever it tries beyond a verb: publishing an event, reading
// ORBIT_EVENTS, submitting a run, approving a held Groundhog commit. A
// verb reaches the engine, which answers (here: no such task).
func TestTheOfficialNATSCLIAsTheAgent(t *testing.T) {
	t.Parallel()
	natsBin := natsCLI(t)
	p := testkit.NewProject(t)
	serve(t, p)
	info, err := engine.ReadInfo(p.Root)
	require.NoError(t, err)
	seed := credsFile(p, events.IdentityAgent)
	inbox, err := events.SeedInboxPrefix(seed)
	require.NoError(t, err)
	env := []string{"XDG_CONFIG_HOME=" + t.TempDir()}
	asAgent := func(args ...string) (string, int) {
		return runNATS(t, natsBin, env, append([]string{"--server", info.URL, "--nkey", seed, "--inbox-prefix", inbox, "--timeout", "2s"}, args...)...)
	}

	for name, args := range map[string][]string{
		"publish an event":  {"pub", events.EventSubject(events.AggregateRun, "R1", events.RunFinished), `{"forged":true}`},
		"read the log":      {"stream", "info", events.EventsStream},
		"submit a run":      {"request", events.EngineSubject(info.Engine, "runs.submit"), "{}"},
		"approve a commit":  {"request", events.EngineSubject(info.Engine, engine.EndpointGroundhogApprove), "{}"},
		"call the group":    {"request", events.APISubject("runs.list"), "{}"},
		"serve an endpoint": {"reply", events.EngineSubject(info.Engine, "groundhog.verb"), "stolen"},
	} {
		// nats request exits 0 on a refused publish (it prints the
		// server's error and waits): the error is what tells.
		out, _ := asAgent(args...)
		assert.Contains(t, out, "Permissions Violation", "%s: %s", name, out)
	}
	out, code := asAgent("request", events.EngineSubject(info.Engine, "groundhog.verb"), `{"task_id":"T-404","token":"x","verb":"checkpoint_success"}`)
	assert.Equal(t, 0, code, out)
	assert.NotContains(t, out, "Permissions Violation")
	assert.Contains(t, out, "T-404", "the engine answered the verb")
}
