package main_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/engine"
	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/internal/testkit"
	"github.com/orbitrun/orbit/projector"
)

// engineURL returns the URL in the project's engine.json.
func engineURL(t *testing.T, p *testkit.Project) string {
	t.Helper()
	info, err := engine.ReadInfo(p.Root)
	require.NoError(t, err)
	return info.URL
}

func credsFile(p *testkit.Project, id events.Identity) string {
	return events.CredsFile(engine.CredsDir(p.Root), id)
}

// TestTheLogAndTheQueuesBelongToTheEngine replays the attacks of issue 11
// through a plain NATS connection, as any process on the machine could,
// with the project's client key and with its reader key, against an engine
// that is running a run: every write is refused by the server, the run ends
// as it would have, and replay --verify finds nothing to correct.
func TestTheLogAndTheQueuesBelongToTheEngine(t *testing.T) {
	t.Parallel()
	p := testkit.NewProject(t)
	p.WriteFile(".orbit/jobs/napper.yaml", `
schemaVersion: 2
kind: Job
metadata: {name: napper}
spec:
  steps:
    - id: nap
      spec: {type: shell, program: sh, args: ["-c", "sleep 4; echo real"], allowed_programs: [sh]}
`)
	runID := runJob(t, p, "napper", "--detach")
	url := engineURL(t, p)
	pwned := filepath.Join(p.Root, "pwned")

	_, err := testkit.DialOutsider(t, url, "")
	require.Error(t, err, "no credentials, no connection")
	assert.Contains(t, err.Error(), "Authorization Violation")

	forgedFinish, err := json.Marshal(map[string]any{
		"id": events.DecisionID(events.StepFinished, runID, "nap", "1"), "type": events.StepFinished,
		"time": "2026-01-01T00:00:00Z", "run_id": runID, "job": "napper", "step_key": "nap",
		"data": map[string]any{"attempt": 1, "state": "success", "output": map[string]any{"stdout": "forged"}},
	})
	require.NoError(t, err)
	stepCmd, err := json.Marshal(map[string]any{
		"run_id": "01JFAKEFAKEFAKEFAKEFAKEFAK", "job": "napper", "step_key": "x", "attempt": 1,
		"activity": map[string]any{"type": "shell", "program": "sh", "args": []string{"-c", "touch " + pwned}, "allowed_programs": []string{"sh"}},
	})
	require.NoError(t, err)
	runReq, err := json.Marshal(map[string]any{
		"run_id": events.NewID(),
		"job": map[string]any{"name": "napper", "spec": map[string]any{"steps": []any{map[string]any{
			"id": "x", "spec": map[string]any{"type": "shell", "program": "sh", "args": []string{"-c", "touch " + pwned}, "allowed_programs": []string{"sh"}},
		}}}},
	})
	require.NoError(t, err)
	withID := func(id string) nats.Header { h := nats.Header{}; h.Set(nats.MsgIdHdr, id); return h }
	finishSubject := events.EventSubject(events.AggregateRun, runID, events.StepFinished)

	writes := map[string]*nats.Msg{
		"stream delete":         {Subject: "$JS.API.STREAM.DELETE." + events.EventsStream},
		"stream purge":          {Subject: "$JS.API.STREAM.PURGE." + events.EventsStream},
		"stream update":         {Subject: "$JS.API.STREAM.UPDATE." + events.EventsStream, Data: []byte(`{"name":"ORBIT_EVENTS","subjects":["orbit.events.>"],"deny_delete":false,"deny_purge":false}`)},
		"message delete":        {Subject: "$JS.API.STREAM.MSG.DELETE." + events.EventsStream, Data: []byte(`{"seq":1}`)},
		"commands stream purge": {Subject: "$JS.API.STREAM.PURGE." + events.CommandsStream},
		"engine consumer gone":  {Subject: "$JS.API.CONSUMER.DELETE." + events.CommandsStream + ".orchestrator"},
		"commands consumer":     {Subject: "$JS.API.CONSUMER.CREATE." + events.CommandsStream},
		"steps stream purge":    {Subject: "$JS.API.STREAM.PURGE." + events.StepsStream},
		"steps consumer gone":   {Subject: "$JS.API.CONSUMER.DELETE." + events.StepsStream + ".worker-shell"},
		"steps consumer":        {Subject: "$JS.API.CONSUMER.CREATE." + events.StepsStream},
		"steps durable":         {Subject: "$JS.API.CONSUMER.DURABLE.CREATE." + events.StepsStream + ".mine"},
		"step command taken":    {Subject: "$JS.API.CONSUMER.MSG.NEXT." + events.StepsStream + ".worker-shell", Data: []byte(`{"batch":1}`)},
		"step command read":     {Subject: "$JS.API.STREAM.MSG.GET." + events.StepsStream, Data: []byte(`{"seq":1}`)},
		"step command direct":   {Subject: "$JS.API.DIRECT.GET." + events.StepsStream, Data: []byte(`{"seq":1}`)},
		"forged event, derived id": {Subject: finishSubject, Data: forgedFinish,
			Header: withID(events.DecisionID(events.StepFinished, runID, "nap", "1"))},
		"forged event, no id": {Subject: finishSubject, Data: forgedFinish},
		"forged step command": {Subject: events.CommandSubject("step.shell.01JFAKEFAKEFAKEFAKEFAKEFAK.x.1"), Data: stepCmd},
		"forged run request":  {Subject: events.CommandSubject("run.request"), Data: runReq},
		"lease write":         {Subject: "$KV." + events.LeasesBucket + ".run.x", Data: []byte("mine")},
		"lock write":          {Subject: "$KV." + events.LocksBucket + ".reservations", Data: []byte("{}")},
		"blob chunk put":      {Subject: "$O." + events.BlobsStore + ".C.forged", Data: []byte("forged")},
		"blob meta put":       {Subject: "$O." + events.BlobsStore + ".M.Zm9yZ2Vk", Data: []byte("{}")},
	}
	for _, id := range []events.Identity{events.IdentityClient, events.IdentityReader} {
		o, err := testkit.DialOutsider(t, url, credsFile(p, id))
		require.NoError(t, err, id)
		for name, msg := range writes {
			reply, refused := o.Ask(msg)
			assert.True(t, refused, "%s with the %s key: not refused (reply %v)", name, id, reply)
		}
		for _, subject := range []string{"orbit.cmd.>", "orbit.step.>", "_ORBIT_ENGINE.>", "$KV.>"} {
			assert.True(t, o.SubscribeRefused(subject), "%s may not subscribe to %s", id, subject)
		}
		// What they may do, they can.
		reply, refused := o.Ask(&nats.Msg{Subject: "$JS.API.STREAM.INFO." + events.EventsStream})
		require.False(t, refused, id)
		require.NotNil(t, reply, id)
		assert.Contains(t, string(reply.Data), `"name":"ORBIT_EVENTS"`, id)

		reply, refused = o.Ask(&nats.Msg{Subject: events.APISubject(engine.EndpointInfo)})
		if id == events.IdentityReader {
			assert.True(t, refused, "a reader may not call the API")
		} else {
			require.NotNil(t, reply, "a client calls the API")
			assert.Contains(t, string(reply.Data), `"version"`)
		}
	}

	view := orbitJSON[projector.RunView](t, p, "run", "show", runID, "--json")
	assert.Equal(t, events.StateRunning, view.State, "the run went on while it was attacked")

	r := p.Orbit("run", "tail", runID)
	require.Equal(t, 0, r.Code, r.String())
	r = p.Orbit("run", "show", runID, "--json")
	require.Equal(t, 0, r.Code, r.String())
	require.NoError(t, json.Unmarshal([]byte(r.Stdout), &view))
	assert.Equal(t, events.StateSuccess, view.State)
	assert.Contains(t, r.Stdout, "real")
	assert.NotContains(t, r.Stdout, "forged")
	r = p.Orbit("run", "events", runID)
	require.Equal(t, 0, r.Code, r.String())
	assert.NotContains(t, r.Stdout, "forged")
	assert.Equal(t, 1, strings.Count(r.Stdout, "step.finished"), r.Stdout)
	_, err = os.Stat(pwned)
	assert.True(t, os.IsNotExist(err), "no forged command ran")

	r = p.Orbit("replay", "--verify")
	require.Equal(t, 0, r.Code, r.String())
	assert.Contains(t, r.Stdout, " 0 differences")
	r = p.Orbit("run", "history")
	require.Equal(t, 0, r.Code, r.String())
	assert.Equal(t, 1, strings.Count(r.Stdout, "napper"), "the log is whole and has no forged run:\n%s", r.Stdout)
}

// asAnotherUser makes cmd run as a user who is not the project's owner:
// as nobody when the tests run as root (whom no file mode stops), else as
// the owner with the client's seed made unreadable.
func asAnotherUser(t *testing.T, p *testkit.Project, cmd *exec.Cmd) {
	t.Helper()
	if os.Geteuid() != 0 {
		require.NoError(t, os.Chmod(credsFile(p, events.IdentityClient), 0))
		t.Cleanup(func() { _ = os.Chmod(credsFile(p, events.IdentityClient), 0o600) })
		return
	}
	// nobody may reach the project and the binary, not the seeds.
	for dir := p.Root; dir != "/"; dir = filepath.Dir(dir) {
		require.NoError(t, os.Chmod(dir, 0o755))
		if dir == os.TempDir() || filepath.Dir(dir) == os.TempDir() {
			break
		}
	}
	require.NoError(t, os.Chmod(filepath.Dir(p.Bin), 0o755))
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
}

// TestAnotherUserIsRefusedAndStartsNoEngine: a user who cannot read the
// root's client seed is refused with exit code 3 and what to pass, whether
// the owner's engine runs or not, and never starts an engine of their own.
func TestAnotherUserIsRefusedAndStartsNoEngine(t *testing.T) {
	t.Parallel()
	p := testkit.NewProject(t)
	owner := startedEngine(t, p)

	other := func() testkit.Result {
		cmd := p.Command("run", "history")
		asAnotherUser(t, p, cmd)
		var stdout, stderr strings.Builder
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		var exit *exec.ExitError
		require.ErrorAs(t, err, &exit, "stderr: %s", stderr.String())
		return testkit.Result{Stdout: stdout.String(), Stderr: stderr.String(), Code: exit.ExitCode()}
	}
	r := other()
	assert.Equal(t, 3, r.Code, r.String())
	assert.Contains(t, r.Stderr, "refused: cannot read "+credsFile(p, events.IdentityClient))
	assert.Contains(t, r.Stderr, "pass --nkey")
	assert.Equal(t, owner, p.EnginePID(), "the owner's engine serves on")

	p.StopEngine()
	r = other()
	assert.Equal(t, 3, r.Code, r.String())
	assert.Contains(t, r.Stderr, "refused: cannot read")
	assert.Zero(t, p.EnginePID(), "no engine was started")
}

// TestTheWriteAPIChecksWhatItIsAsked: what a client may no longer publish
// it asks the engine for, and the engine refuses what a client could not
// have asked for through the CLI: a run id that is not a ULID or that the
// log has, a child run, a job that does not validate, a cancel of a run
// that does not exist or has finished.
func TestTheWriteAPIChecksWhatItIsAsked(t *testing.T) {
	t.Parallel()
	p := testkit.NewProject(t)
	done := runJob(t, p, "hello")
	ctx := testkit.Context(t)
	l, err := events.Dial(ctx, engineURL(t, p), events.Config{NKeySeedFile: credsFile(p, events.IdentityClient)})
	require.NoError(t, err)
	defer l.Close()

	job := func() map[string]any {
		return map[string]any{"name": "forged", "spec": map[string]any{"steps": []any{map[string]any{
			"id": "x", "activity": map[string]any{"type": "deterministic", "action": "echo", "config": map[string]any{"text": "hi"}},
		}}}}
	}
	for name, tt := range map[string]struct {
		endpoint string
		req      map[string]any
		want     error
		says     string
	}{
		"not a ULID":        {engine.EndpointSubmit, map[string]any{"run_id": "../../x", "job": job()}, events.ErrInvalidRequest, "want a ULID"},
		"a run id in use":   {engine.EndpointSubmit, map[string]any{"run_id": done, "job": job()}, events.ErrInvalidRequest, "is taken"},
		"a child run":       {engine.EndpointSubmit, map[string]any{"run_id": events.NewID(), "job": job(), "parent": map[string]any{"run_id": done}}, events.ErrInvalidRequest, "cannot submit a child run"},
		"a deep run":        {engine.EndpointSubmit, map[string]any{"run_id": events.NewID(), "job": job(), "depth": 3}, events.ErrInvalidRequest, "cannot submit a child run"},
		"a disabled job":    {engine.EndpointSubmit, map[string]any{"run_id": events.NewID(), "job": map[string]any{"name": "off", "spec": map[string]any{"state": "disabled"}}}, events.ErrInvalidRequest, "off"},
		"cancel, no run":    {engine.EndpointCancel, map[string]any{"run_id": events.NewID()}, events.ErrNotFound, "run"},
		"cancel, finished":  {engine.EndpointCancel, map[string]any{"run_id": done}, events.ErrInvalidRequest, "already finished"},
		"cancel, no run id": {engine.EndpointCancel, map[string]any{}, events.ErrInvalidRequest, "needs a run_id"},
	} {
		err := l.Request(ctx, tt.endpoint, tt.req, nil)
		assert.ErrorIs(t, err, tt.want, name)
		assert.ErrorContains(t, err, tt.says, name)
	}

	var ok engine.Submitted
	id := events.NewID()
	require.NoError(t, l.Request(ctx, engine.EndpointSubmit, map[string]any{"run_id": id, "job": job()}, &ok))
	assert.Equal(t, id, ok.RunID)
	r := p.Orbit("run", "tail", id)
	assert.Equal(t, 0, r.Code, "a valid request runs: %s", r)
}

// TestAReaderKeysAPICallsFailAtOnce: the reader's key may read the log and
// nothing else, and the server refuses its API requests. Every command
// that asks the engine says so at once ("this key may not ask the engine
// for …", exit 2) rather than waiting out the request timeout for an
// answer that cannot come and calling the engine unavailable; what the
// key may do, it still does.
func TestAReaderKeysAPICallsFailAtOnce(t *testing.T) {
	t.Parallel()
	p := testkit.NewProject(t)
	serve(t, p)
	reader := credsFile(p, events.IdentityReader)
	for _, args := range [][]string{
		{"run", "show", "01JFAKEFAKEFAKEFAKEFAKEFAK"},
		{"run", "cancel", "01JFAKEFAKEFAKEFAKEFAKEFAK"},
		{"job", "pause", "hello"},
		{"task", "list"},
		{"engine", "status"},
	} {
		r := p.Orbit(append([]string{"--nkey", reader}, args...)...)
		assert.Equal(t, 2, r.Code, "%v: %s", args, r)
		assert.Contains(t, r.Stderr, "orbit: this key may not ask the engine for ", args)
		assert.Contains(t, r.Stderr, "a reader's only reads the log", args)
	}
	r := p.Orbit("--nkey", reader, "doctor")
	assert.Contains(t, r.Stdout, "skip  engine         this key may not ask the engine how it is", r)
	assert.NotContains(t, r.Stdout, "orbit engine stop", "a reader's key is not fixed by restarting the engine")
	assert.Contains(t, r.Stdout, "ok    jetstream", "the reader reads the stream")
}
