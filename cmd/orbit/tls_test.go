package main_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/internal/testkit"
)

// TestTLSOnTheEnginesListener: with serve.tls the engine's listener speaks
// TLS only and, with a ca, admits only clients with a certificate that ca
// signed. A NATS client that trusts the CA and shows its certificate
// connects; one that does not trust it, one without a certificate and a
// plain-text one are refused. The CLI takes the CA from the config (or
// --tls-ca) and its certificate from --tls-cert/--tls-key, and the context
// orbit nats-context writes carries them for the official nats CLI.
func TestTLSOnTheEnginesListener(t *testing.T) {
	t.Parallel()
	natsBin := natsCLI(t)
	pki, rogue := testkit.NewPKI(t), testkit.NewPKI(t)
	p := testkit.NewProject(t)
	xdg := t.TempDir()
	p.Env = append(p.Env, "XDG_CONFIG_HOME="+xdg)
	listen := testkit.FreeAddr(t)
	p.WriteFile(".orbit/config.yaml", fmt.Sprintf("serve:\n  listen: %s\n  tls: {cert: %q, key: %q, ca: %q}\n", listen, pki.ServerCert, pki.ServerKey, pki.CA))
	serveWith(t, p)
	url := engineURL(t, p)
	require.Equal(t, "tls://"+listen, url)

	seed := credsFile(p, events.IdentityClient)
	inbox, err := events.SeedInboxPrefix(seed)
	require.NoError(t, err)
	dial := func(opts ...nats.Option) error {
		key, err := nats.NkeyOptionFromSeed(seed)
		require.NoError(t, err)
		nc, err := nats.Connect(url, append(opts, key, nats.CustomInboxPrefix(inbox), nats.Timeout(5*time.Second), nats.NoReconnect())...)
		if err != nil {
			return err
		}
		defer nc.Close()
		msg, err := nc.Request("orbit.api.engine.info", nil, 10*time.Second)
		if err != nil {
			return err
		}
		assert.Contains(t, string(msg.Data), `"version"`)
		return nil
	}
	assert.NoError(t, dial(nats.RootCAs(pki.CA), nats.ClientCert(pki.ClientCert, pki.ClientKey)), "the CA and a certificate it signed")
	err = dial(nats.ClientCert(pki.ClientCert, pki.ClientKey))
	assert.ErrorContains(t, err, "certificate signed by unknown authority", "a client that does not trust the CA")
	err = dial(nats.RootCAs(rogue.CA), nats.ClientCert(rogue.ClientCert, rogue.ClientKey))
	assert.ErrorContains(t, err, "certificate signed by unknown authority", "another CA")
	assert.Error(t, dial(nats.RootCAs(pki.CA)), "a client without a certificate")
	assert.Error(t, dial(nats.RootCAs(pki.CA), nats.ClientCert(rogue.ClientCert, rogue.ClientKey)), "a certificate another CA signed")
	assert.True(t, speaksTLSOnly(t, listen), "a plain-text client gets nowhere")

	r := p.Orbit("run", "history")
	assert.Equal(t, 3, r.Code, r.String())
	assert.Contains(t, r.Stderr, "--tls-cert")
	assert.Zero(t, strings.Count(r.Stderr, "the engine exited"), "no second engine was started")

	p.Env = append(p.Env, "ORBIT_TLS_CERT="+pki.ClientCert, "ORBIT_TLS_KEY="+pki.ClientKey)
	r = p.Orbit("job", "run", "hello")
	require.Equal(t, 0, r.Code, r.String())
	r = p.Orbit("--nats-url", url, "--tls-ca", pki.CA, "run", "history")
	assert.Equal(t, 0, r.Code, r.String())
	assert.Contains(t, r.Stdout, "hello")
	r = p.Orbit("--nats-url", url, "--tls-ca", rogue.CA, "run", "history")
	assert.Equal(t, 3, r.Code, r.String())
	assert.Contains(t, r.Stderr, "--tls-ca")

	// A CLI agent's verbs reach the engine with the TLS files its scope
	// carries (mcp.Scope): the engine answers that it has no such task.
	agent := []string{"ORBIT_NATS_URL=" + url, "ORBIT_NKEY=" + credsFile(p, events.IdentityAgent), "ORBIT_TASK_ID=T-1", "ORBIT_ATTEMPT_TOKEN=not-an-attempt"}
	verb := func(env ...string) testkit.Result {
		q := *p
		q.Env = append(append(slices.Clone(p.Env), agent...), env...)
		return q.Orbit("groundhog", "success", "--summary", "done")
	}
	r = verb("ORBIT_TLS_CA=" + pki.CA)
	assert.Equal(t, 2, r.Code, r.String())
	assert.Contains(t, r.Stderr, `no task "T-1"`)
	r = verb("ORBIT_TLS_CERT=", "ORBIT_TLS_KEY=")
	assert.Equal(t, 3, r.Code, "without the engine's CA: %s", r)
	assert.Contains(t, r.Stderr, "refused: TLS with the engine at "+url)

	r = p.Orbit("nats-context", "--name", "orbit-tls")
	require.Equal(t, 0, r.Code, r.String())
	_, ctx := wroteContext(t, r)
	assert.Equal(t, url, ctx.URL)
	assert.Equal(t, pki.CA, ctx.CA)
	assert.Equal(t, pki.ClientCert, ctx.Cert)
	assert.Equal(t, pki.ClientKey, ctx.Key)
	env := []string{"XDG_CONFIG_HOME=" + xdg}
	out, code := runNATS(t, natsBin, env, "--context", "orbit-tls", "request", "orbit.api.engine.info", "")
	assert.Equal(t, 0, code, out)
	assert.Contains(t, out, `"version"`)

	ctx.CA = ""
	data, err := json.Marshal(ctx)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(xdg, "nats", "context", "no-ca.json"), data, 0o600))
	out, code = runNATS(t, natsBin, env, "--context", "no-ca", "--timeout", "5s", "request", "orbit.api.engine.info", "")
	assert.NotEqual(t, 0, code, out)
	assert.Contains(t, out, "certificate signed by unknown authority")
}

// speaksTLSOnly reports whether the server at addr says TLS is required
// and turns away a client that goes on in plain text.
func speaksTLSOnly(t *testing.T, addr string) bool {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	require.NoError(t, err)
	defer conn.Close()
	require.NoError(t, conn.SetDeadline(time.Now().Add(10*time.Second)))
	rd := bufio.NewReader(conn)
	info, err := rd.ReadString('\n')
	require.NoError(t, err)
	if !strings.Contains(info, `"tls_required":true`) {
		return false
	}
	_, err = conn.Write([]byte("CONNECT {\"verbose\":false}\r\nPING\r\n"))
	require.NoError(t, err)
	for {
		line, err := rd.ReadString('\n')
		if err != nil {
			return true // closed without a PONG
		}
		if strings.HasPrefix(line, "PONG") {
			return false
		}
	}
}
