package main_test

import (
	"bytes"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/engine"
	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/internal/testkit"
	"github.com/orbitrun/orbit/projector"
)

func TestTheEmbeddedServerTakesNoToken(t *testing.T) {
	t.Parallel()
	p := testkit.NewProject(t)
	r := p.Orbit("serve", "--listen", "127.0.0.1:0", "--token", "a-long-random-engine-token-for-tests")
	assert.Equal(t, 2, r.Code, r.String())
	assert.Contains(t, r.Stderr, "--token (ORBIT_TOKEN) is sent to an external server given with --nats-url")
	assert.Contains(t, r.Stderr, filepath.Join(".orbit", "state", "creds"))
}

// TestListeningBeyondLoopbackWithAnNKey: an engine listening beyond
// loopback admits its project's identities and a key given with --nkey
// (orbit nkey new makes one), and no other.
func TestListeningBeyondLoopbackWithAnNKey(t *testing.T) {
	t.Parallel()
	p := testkit.NewProject(t)
	seed, other := filepath.Join(t.TempDir(), "engine.nk"), filepath.Join(t.TempDir(), "other.nk")
	r := p.Orbit("nkey", "new", seed)
	require.Equal(t, 0, r.Code, r.String())
	assert.Regexp(t, `^U[A-Z2-7]{55}\n$`, r.Stdout)
	require.Equal(t, 0, p.Orbit("nkey", "new", other).Code)

	cmd := p.Command("serve", "--listen", "0.0.0.0:0", "--nkey", seed)
	stderr := &testkit.SyncBuffer{}
	cmd.Stderr = stderr
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	waitFor(t, "the engine to serve", func() bool { return strings.Contains(stderr.String(), "engine running") })
	assert.Contains(t, stderr.String(), "warning: 0.0.0.0:0 is beyond loopback and without TLS", "listening so is allowed, and said")

	r = p.Orbit("run", "history", "--nkey", other)
	assert.Equal(t, 3, r.Code, "a client with a key the engine does not know gets nowhere:\n%s", r)
	assert.Contains(t, r.Stderr, "refused: ")
	assert.Contains(t, r.Stderr, "Authorization Violation")
	assert.Contains(t, r.Stderr, "pass --nkey")
	r = p.Orbit("job", "run", "hello", "--nkey", seed)
	assert.Equal(t, 0, r.Code, r.String())
	r = p.Orbit("run", "history")
	assert.Equal(t, 0, r.Code, "the root's own client: %s", r)
	assert.Contains(t, r.Stdout, "hello")
}

// TestSecretsNeverReachTheStore runs steps that use two secrets — one the
// shell inherits, one passed through a template — prints them and the
// seeds of the project's identities, fails with one in its error, and then
// searches every byte Orbit stored (the NATS store, the views, the
// engine's log) for them.
func TestSecretsNeverReachTheStore(t *testing.T) {
	t.Parallel()
	const apiKey = "sk-ant-api03-FAKE-key-that-must-never-be-stored-7731"
	const deployToken = "tok-FAKE-deploy-token-that-must-never-be-stored-4420"
	p := testkit.NewProject(t)
	p.Env = append(p.Env, "ANTHROPIC_API_KEY="+apiKey, "DEPLOY_TOKEN="+deployToken)
	p.WriteFile(".orbit/jobs/leaky.yaml", `
schemaVersion: 2
kind: Job
metadata: {name: leaky}
spec:
  steps:
    - id: use
      default_input: {token: "{{ env.DEPLOY_TOKEN }}"}
      spec:
        type: shell
        program: sh
        args: ["-c", "echo key=$ANTHROPIC_API_KEY token=$1; printf %s \"$1\" > used-token.txt", "sh", "{{ input.token }}"]
        allowed_programs: [sh]
    - id: seeds
      spec:
        type: shell
        program: sh
        args: ["-c", "cat .orbit/state/creds/*.nk; cat .orbit/state/creds/engine.nk >&2"]
        allowed_programs: [sh]
    - id: fail
      spec:
        type: shell
        program: sh
        args: ["-c", "echo \"auth failed for $ANTHROPIC_API_KEY\" >&2; exit 1"]
        allowed_programs: [sh]
`)
	r := p.Orbit("job", "run", "leaky")
	require.Equal(t, 1, r.Code, r.String())
	assert.Contains(t, r.Stderr, "auth failed for [REDACTED]")
	used, err := os.ReadFile(filepath.Join(p.Root, "used-token.txt"))
	require.NoError(t, err)
	assert.Equal(t, deployToken, string(used), "the step got the real secret")
	r = p.Orbit("run", "show", "--json", "-s", "use")
	require.Equal(t, 0, r.Code, r.String())
	assert.Contains(t, r.Stdout, "key=[REDACTED] token=[REDACTED]")
	p.StopEngine()

	secrets := []string{apiKey, deployToken}
	for _, id := range events.Identities {
		seed, err := events.Seed(events.CredsFile(filepath.Join(p.Root, ".orbit", "state", "creds"), id))
		require.NoError(t, err)
		secrets = append(secrets, seed)
	}
	eachStoredFile(t, p.Root, func(path string, data []byte) {
		for _, secret := range secrets {
			assert.False(t, bytes.Contains(data, []byte(secret)), "%s holds a secret", path)
		}
	})
	for _, seed := range secrets[2:] {
		assert.NotContains(t, r.Stdout+r.Stderr, seed, "the CLI printed a seed")
	}
}

// eachStoredFile calls check with the path and the content of every file
// of the engine's state directory under root but its credentials (where
// the seeds are kept), and checks that the whole store was searched.
func eachStoredFile(t *testing.T, root string, check func(path string, data []byte)) {
	t.Helper()
	files := 0
	require.NoError(t, filepath.WalkDir(engine.StateDir(root), func(path string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() && d.Name() == "creds" {
			return filepath.SkipDir
		}
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		files++
		check(path, data)
		return nil
	}))
	assert.Greater(t, files, 5, "the whole store was searched")
}

// TestArgumentsAreNeverReSplit: a rendered value is one argv element, so a
// value with shell syntax in it cannot run anything.
func TestArgumentsAreNeverReSplit(t *testing.T) {
	t.Parallel()
	p := testkit.NewProject(t)
	p.WriteFile(".orbit/jobs/echoer.yaml", `
schemaVersion: 2
kind: Job
metadata: {name: echoer}
spec:
  steps:
    - id: say
      spec: {type: shell, program: echo, args: ["{{ input.x }}"], allowed_programs: [echo]}
`)
	hostile := `hi; touch pwned && echo $(touch pwned2) | sh -c 'touch pwned3'`
	input, err := json.Marshal(map[string]string{"x": hostile})
	require.NoError(t, err)
	view := orbitJSON[projector.RunView](t, p, "job", "run", "echoer", "--json", "--input", string(input))
	assert.Equal(t, hostile+"\n", view.Output.(map[string]any)["stdout"], "one argument, printed as given")
	for _, f := range []string{"pwned", "pwned2", "pwned3"} {
		_, err := os.Stat(filepath.Join(p.Root, f))
		assert.True(t, os.IsNotExist(err), "%s must not exist", f)
	}
}

// TestAFixtureCannotRunWhatThePolicyForbids: a scripted (or real) model
// asking shell.exec for a program outside the allowlist is denied.
func TestAFixtureCannotRunWhatThePolicyForbids(t *testing.T) {
	t.Parallel()
	p := testkit.NewProject(t)
	p.Env = append(p.Env, "ORBIT_REPLAY_FIXTURE="+p.WriteFile("evil.json", `[
	  {"content": [{"kind": "tool_use", "id": "x", "name": "shell.exec", "input": {"program": "touch", "args": ["pwned"]}}], "stop_reason": "tool_use"}
	]`))
	p.WriteFile(".orbit/jobs/agentic.yaml", `
schemaVersion: 2
kind: Job
metadata: {name: agentic}
spec:
  steps:
    - id: agent
      spec: {type: agent_loop, provider: claude, tools: [shell.exec], allowed_programs: [echo]}
`)
	r := p.Orbit("job", "run", "agentic")
	assert.Equal(t, 1, r.Code, r.String())
	assert.Contains(t, r.Stderr, `program "touch" is not in the allowlist`)
	_, err := os.Stat(filepath.Join(p.Root, "pwned"))
	assert.True(t, os.IsNotExist(err))
	denied := runEvents(t, p, strings.TrimSpace(r.Stdout), "--type", events.ToolDenied)
	assert.Len(t, denied, 1)
}
