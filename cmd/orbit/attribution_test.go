package main_test

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/assets"
	"github.com/orbitrun/orbit/engine"
	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/executor"
	"github.com/orbitrun/orbit/internal/testkit"
	"github.com/orbitrun/orbit/projector"
)

// TestWritesRecordWhoSignedThem is finding 9 of issue 24: a write records
// the requester it names and, beside it, the identity the server
// authenticated. A run submitted with the root's client key and cancelled
// by a raw client of a key admitted with serve --nkey that names someone
// else ("mallory") shows both in orbit run show, its --json and the
// trace; a signer a submission names itself is not taken.
func TestWritesRecordWhoSignedThem(t *testing.T) {
	t.Parallel()
	p := testkit.NewProject(t)
	extra := filepath.Join(t.TempDir(), "extra.nk")
	r := p.Orbit("nkey", "new", extra)
	require.Equal(t, 0, r.Code, r.String())
	extraKey := strings.TrimSpace(r.Stdout)
	cmd := p.Command("serve", "--listen", "127.0.0.1:0", "--nkey", extra)
	stderr := &testkit.SyncBuffer{}
	cmd.Stderr = stderr
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	waitFor(t, "the engine to serve", func() bool { return strings.Contains(stderr.String(), "engine running") })
	clientKey := clientKey(t, p)

	runID := runJob(t, p, "example_slow", "--detach")
	o, err := testkit.DialOutsider(t, engineURL(t, p), extra)
	require.NoError(t, err)
	body, err := json.Marshal(engine.CancelRequest{RunID: runID, Requester: "mallory", Reason: "not mine"})
	require.NoError(t, err)
	reply, err := o.NC.Request(events.APISubject(engine.EndpointCancel), body, 10*time.Second)
	require.NoError(t, err)
	require.Empty(t, reply.Header.Get("Nats-Service-Error"), string(reply.Data))
	r = p.Orbit("run", "tail", runID)
	require.Equal(t, 0, r.Code, r.String())
	require.Contains(t, r.Stdout, "run.finished", "the run ended")

	r = p.Orbit("run", "show", runID)
	require.Equal(t, 0, r.Code, r.String())
	assert.Regexp(t, `Requester: cli:\S+, signed by client `+clientKey+`\n`, r.Stdout)
	assert.Contains(t, r.Stdout, "Cancel:    requested by mallory, signed by client "+extraKey+": not mine\n")
	view := orbitJSON[projector.RunView](t, p, "run", "show", runID, "--json")
	assert.Equal(t, &events.Signer{Identity: events.IdentityClient, Key: clientKey}, view.Signer)
	require.NotNil(t, view.Cancel)
	assert.Equal(t, "mallory", view.Cancel.Requester)
	assert.Equal(t, &events.Signer{Identity: events.IdentityClient, Key: extraKey}, view.Cancel.Signer)
	r = p.Orbit("run", "trace", runID)
	require.Equal(t, 0, r.Code, r.String())
	assert.Contains(t, r.Stdout, "by mallory  signed by client "+extraKey)

	// A submission that names a signer of its own is recorded with the
	// one the server authenticated.
	job, err := assets.ParseJob("forged.yaml", []byte("schemaVersion: 2\nkind: Job\nmetadata: {name: forged}\nspec:\n  steps:\n"+
		"    - id: x\n      spec: {type: deterministic, action: echo, config: {a: 1}}\n"), nil)
	require.NoError(t, err)
	submission, err := executor.NewRunRequest(job, nil, "mallory")
	require.NoError(t, err)
	submission.Signer = &events.Signer{Identity: events.IdentityEngine, Key: "UFORGED"}
	body, err = json.Marshal(submission)
	require.NoError(t, err)
	reply, err = o.NC.Request(events.APISubject(engine.EndpointSubmit), body, 10*time.Second)
	require.NoError(t, err)
	require.Empty(t, reply.Header.Get("Nats-Service-Error"), string(reply.Data))
	r = p.Orbit("run", "tail", submission.RunID)
	require.Equal(t, 0, r.Code, r.String())
	r = p.Orbit("run", "show", submission.RunID)
	require.Equal(t, 0, r.Code, r.String())
	assert.Contains(t, r.Stdout, "Requester: mallory, signed by client "+extraKey+"\n")
}

// clientKey is the public key of the project's client identity.
func clientKey(t *testing.T, p *testkit.Project) string {
	t.Helper()
	creds, err := events.EnsureCreds(engine.CredsDir(p.Root))
	require.NoError(t, err)
	return creds.Public[events.IdentityClient]
}
