package main_test

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/engine"
	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/internal/testkit"
)

// natsCLI returns the official nats CLI that `make nats-cli` installs in
// bin/. The test skips without it only outside CI.
func natsCLI(t *testing.T) string {
	t.Helper()
	path := filepath.Join(testkit.ModuleRoot(t), "bin", "nats")
	if _, err := os.Stat(path); err != nil {
		if os.Getenv("CI") == "" {
			t.Skipf("%s is missing: make nats-cli installs it", path)
		}
		t.Fatalf("%s is missing in CI: make test runs make nats-cli first", path)
	}
	return path
}

// natsCLIProject is the rig of the tests that drive the official nats CLI
// through the contexts orbit nats-context writes: a fresh project, the
// CLI, and the environment that has the CLI read its contexts from the
// config directory, of the test's own, that the project writes them to.
func natsCLIProject(t *testing.T) (p *testkit.Project, natsBin string, env []string) {
	t.Helper()
	natsBin = natsCLI(t)
	p = testkit.NewProject(t)
	xdg := t.TempDir()
	p.Env = append(p.Env, "XDG_CONFIG_HOME="+xdg)
	return p, natsBin, []string{"XDG_CONFIG_HOME=" + xdg}
}

// runNATS runs the nats CLI with env and returns its combined output and
// exit code.
func runNATS(t *testing.T, bin string, env []string, args ...string) (string, int) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return string(out), exit.ExitCode()
	}
	if err != nil {
		t.Fatalf("running nats %v: %v", args, err)
	}
	return string(out), 0
}

func natsMsg(subject string) *nats.Msg { return &nats.Msg{Subject: subject} }

// TestTheOfficialNATSCLI: with the contexts orbit nats-context writes, the
// real nats CLI tails and reads the log as the reader and calls the API as
// the client; deleting the stream or publishing an event is refused;
// without a context the server turns it away.
func TestTheOfficialNATSCLI(t *testing.T) {
	t.Parallel()
	p, natsBin, env := natsCLIProject(t)
	serve(t, p)
	url := engineURL(t, p)

	r := p.Orbit("nats-context", "--reader", "--name", "orbit-test-reader")
	require.Equal(t, 0, r.Code, r.String())
	assert.Contains(t, r.Stdout, "nats --context orbit-test-reader sub 'orbit.events.>'")
	r = p.Orbit("nats-context", "--name", "orbit-test")
	require.Equal(t, 0, r.Code, r.String())
	assert.Contains(t, r.Stdout, url+" as client")

	sub := exec.Command(natsBin, "--context", "orbit-test-reader", "sub", "orbit.events.>")
	sub.Env = append(os.Environ(), env...)
	var tail testkit.SyncBuffer
	sub.Stdout, sub.Stderr = &tail, &tail
	require.NoError(t, sub.Start())
	t.Cleanup(func() { _ = sub.Process.Kill(); _ = sub.Wait() })
	waitFor(t, "nats sub to subscribe", func() bool { return strings.Contains(tail.String(), "Subscribing on orbit.events.>") })
	runID := runJob(t, p, "hello")
	waitFor(t, "the reader to see the run end", func() bool {
		return strings.Contains(tail.String(), `"orbit.events.run.`+runID+`.run.finished"`)
	})

	// The reader reads the stream as docs/security.md says: a stored event by
	// its sequence, and the log from its start through a pull consumer
	// that the engine makes for it.
	out, code := runNATS(t, natsBin, env, "--context", "orbit-test-reader", "--timeout", "3s", "stream", "get", events.EventsStream, "1")
	assert.Equal(t, 0, code, out)
	assert.Contains(t, out, ".run.requested")
	out, code = runNATS(t, natsBin, env, "--context", "orbit-test-reader", "--timeout", "3s", "sub", "--stream", events.EventsStream, "--all", "--count", "2", events.EventsRoot+".>")
	assert.Equal(t, 0, code, out)
	assert.Contains(t, out, "stream: ORBIT_EVENTS seq: 2")

	out, code = runNATS(t, natsBin, env, "--context", "orbit-test", "request", "orbit.api.engine.info", "")
	assert.Equal(t, 0, code, out)
	assert.Contains(t, out, `"version"`, "the client calls the API")
	out, code = runNATS(t, natsBin, env, "--context", "orbit-test-reader", "--timeout", "2s", "request", "orbit.api.engine.info", "")
	assert.Contains(t, out, `Permissions Violation for Publish to "orbit.api.engine.info"`, "the reader may not: %d", code)

	for _, ctx := range []string{"orbit-test", "orbit-test-reader"} {
		out, code = runNATS(t, natsBin, env, "--context", ctx, "--timeout", "2s", "stream", "rm", events.EventsStream, "-f")
		assert.NotEqual(t, 0, code, out)
		assert.Contains(t, out, `Permissions Violation for Publish to "$JS.API.STREAM.DELETE.ORBIT_EVENTS"`)
		out, code = runNATS(t, natsBin, env, "--context", ctx, "pub", "orbit.events.run."+runID+".run.finished", `{"forged":true}`)
		assert.NotEqual(t, 0, code, out)
		assert.Contains(t, out, "Permissions Violation for Publish to")
		// The step commands' queue: neither sent to, nor read, nor
		// taken from, nor given a consumer of one's own.
		out, code = runNATS(t, natsBin, env, "--context", ctx, "pub", events.CommandSubject("step.shell."+runID+".x.1"), `{"forged":true}`)
		assert.NotEqual(t, 0, code, out)
		assert.Contains(t, out, `Permissions Violation for Publish to "orbit.step.shell.`)
		out, code = runNATS(t, natsBin, env, "--context", ctx, "--timeout", "2s", "stream", "get", events.StepsStream, "1")
		assert.NotEqual(t, 0, code, out)
		assert.Contains(t, out, "Permissions Violation for Publish to \"$JS.API.STREAM.INFO."+events.StepsStream+"\"")
		out, code = runNATS(t, natsBin, env, "--context", ctx, "--timeout", "2s", "consumer", "next", events.StepsStream, "worker-shell")
		assert.NotEqual(t, 0, code, out)
		assert.Contains(t, out, "Permissions Violation for Publish to \"$JS.API.CONSUMER.")
		out, code = runNATS(t, natsBin, env, "--context", ctx, "--timeout", "2s", "consumer", "add", events.StepsStream, "mine",
			"--pull", "--filter", events.StepsRoot+".>", "--deliver", "all", "--ack", "explicit", "--defaults")
		assert.NotEqual(t, 0, code, out)
		assert.Contains(t, out, "Permissions Violation for Publish to \"$JS.API.CONSUMER.")
	}

	out, code = runNATS(t, natsBin, env, "--server", url, "--timeout", "2s", "sub", "orbit.events.>")
	assert.NotEqual(t, 0, code, out)
	assert.Contains(t, out, "Authorization Violation")

	r = p.Orbit("run", "events", runID)
	require.Equal(t, 0, r.Code, r.String())
	assert.NotContains(t, r.Stdout, "forged")
	r = p.Orbit("replay", "--verify")
	require.Equal(t, 0, r.Code, r.String())
	assert.Contains(t, r.Stdout, " 0 differences")
}

// TestAnExternalServerConfiguredByNATSConfig: the accounts block that
// orbit nats-config prints, loaded by the NATS server's own configuration
// parser, runs an engine and a client on an external server with the same
// least privilege as the embedded one.
func TestAnExternalServerConfiguredByNATSConfig(t *testing.T) {
	t.Parallel()
	p := testkit.NewProject(t)
	r := p.Orbit("nats-config")
	require.Equal(t, 0, r.Code, r.String())
	srv, opts := configuredNATSServer(t, r.Stdout)
	require.Len(t, opts.Nkeys, len(events.Identities))
	stderr := serveOn(t, p, srv.ClientURL())

	r = p.Orbit("job", "run", "hello")
	require.Equal(t, 0, r.Code, r.String())
	r = p.Orbit("run", "history")
	require.Equal(t, 0, r.Code, r.String())
	assert.Contains(t, r.Stdout, "hello")

	o, err := testkit.DialOutsider(t, srv.ClientURL(), credsFile(p, events.IdentityClient))
	require.NoError(t, err)
	_, refused := o.Ask(natsMsg("$JS.API.STREAM.DELETE." + events.EventsStream))
	assert.True(t, refused, "the client may not delete the log")
	_, refused = o.Ask(natsMsg(events.CommandSubject("run.request")))
	assert.True(t, refused, "the client may not queue a command")
	_, err = testkit.DialOutsider(t, srv.ClientURL(), "")
	assert.ErrorContains(t, err, "Authorization Violation")
	assert.False(t, bytes.Contains([]byte(stderr.String()), []byte("admits anyone")), stderr.String())
	assert.NotContains(t, stderr.String(), "misconfigured", "the block of nats-config keeps the reader a reader")
	assert.NotContains(t, stderr.String(), "does not admit the agent identity")
	assert.NotContains(t, stderr.String(), "account of its own", "the block of nats-config separates the accounts")
	agent, err := testkit.DialOutsider(t, srv.ClientURL(), credsFile(p, events.IdentityAgent))
	require.NoError(t, err)
	_, refused = agent.Ask(natsMsg("$JS.API.STREAM.INFO." + events.EventsStream))
	assert.True(t, refused, "the agent may not read the log")
}

// TestAnEngineSaysWhenTheServerLetsAReaderWrite: on an external server that
// admits the project's identities without permissions or accounts, the
// engine warns at start that the reader could delete the log, and that the
// server does not keep it in an account of its own.
func TestAnEngineSaysWhenTheServerLetsAReaderWrite(t *testing.T) {
	t.Parallel()
	p := testkit.NewProject(t)
	creds, err := events.EnsureCreds(engine.CredsDir(p.Root))
	require.NoError(t, err)
	users := ""
	for _, id := range events.Identities {
		users += "{nkey: " + creds.Public[id] + "}\n"
	}
	stderr := serveOnExternalServer(t, p, "authorization { users = [\n"+users+"] }\n")
	assert.Contains(t, stderr.String(), "the reader identity may change stream ORBIT_EVENTS")
	assert.Contains(t, stderr.String(), "orbit nats-config")
	assert.Contains(t, stderr.String(), "does not keep the engine in an account of its own")
}

// TestNATSContextWithoutAnEngine: with no engine running the context points
// at serve.listen, says that it needs orbit serve, and is named for the
// project's directory and path.
func TestNATSContextWithoutAnEngine(t *testing.T) {
	t.Parallel()
	p := testkit.NewProject(t)
	xdg := t.TempDir()
	p.Env = append(p.Env, "XDG_CONFIG_HOME="+xdg)
	r := p.Orbit("nats-context", "--reader")
	require.Equal(t, 0, r.Code, r.String())
	name, ctx := wroteContext(t, r)
	assert.Regexp(t, "^orbit-"+regexp.QuoteMeta(filepath.Base(p.Root))+"-[0-9a-f]{8}-reader$", name)
	assert.Contains(t, r.Stdout, "the context reaches the engine only while 'orbit serve' runs for "+p.Root+": it listens at nats://127.0.0.1:4222")
	assert.Contains(t, r.Stdout, "nats --context "+name+" sub 'orbit.events.>'")
	assert.Equal(t, "nats://127.0.0.1:4222", ctx.URL)
	assert.Equal(t, credsFile(p, events.IdentityReader), ctx.NKey)
	assert.Zero(t, p.EnginePID(), "writing a context starts no engine")
}

// serveOnExternalServer starts a nats-server configured with the
// authorization block auth and the project's engine on it, and returns
// the engine's stderr once it serves.
func serveOnExternalServer(t *testing.T, p *testkit.Project, auth string) *testkit.SyncBuffer {
	t.Helper()
	srv, _ := configuredNATSServer(t, auth)
	return serveOn(t, p, srv.ClientURL())
}

// configuredNATSServer starts a nats-server from a configuration file: a
// JetStream listener on a random port and the authorization block auth.
// It returns the server and the options the file gave it.
func configuredNATSServer(t *testing.T, auth string) (*server.Server, *server.Options) {
	t.Helper()
	conf := filepath.Join(t.TempDir(), "nats.conf")
	require.NoError(t, os.WriteFile(conf, []byte("listen: 127.0.0.1:-1\njetstream { store_dir: \""+filepath.Join(t.TempDir(), "js")+"\" }\n"+auth), 0o600))
	opts, err := server.ProcessConfigFile(conf)
	require.NoError(t, err)
	opts.NoLog, opts.NoSigs = true, true
	return startNATSServer(t, opts), opts
}

// serveOn starts the project's engine on the NATS server at url and
// returns the engine's stderr once it serves.
func serveOn(t *testing.T, p *testkit.Project, url string) *testkit.SyncBuffer {
	t.Helper()
	p.Env = append(p.Env, "ORBIT_NATS_URL="+url)
	stderr := &testkit.SyncBuffer{}
	cmd := p.Command("serve")
	cmd.Stderr = stderr
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the engine's stderr:\n%s", stderr.String())
		}
	})
	waitFor(t, "the engine to serve", func() bool { return strings.Contains(stderr.String(), "engine running") })
	return stderr
}
