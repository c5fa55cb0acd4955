package main_test

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/engine"
	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/internal/testkit"
)

// TestAReaderCannotReadTheClientsInbox: the contexts orbit nats-context
// writes give each identity its own inbox prefix; with the reader's, the
// official nats CLI may not subscribe to the client's inbox (where the
// engine's API answers go) nor to the shared _INBOX.>, while the client's
// context still calls the API through its own.
func TestAReaderCannotReadTheClientsInbox(t *testing.T) {
	t.Parallel()
	p, natsBin, env := natsCLIProject(t)
	serve(t, p)
	creds, err := events.EnsureCreds(engine.CredsDir(p.Root))
	require.NoError(t, err)

	r := p.Orbit("nats-context", "--reader", "--name", "orbit-inbox-reader")
	require.Equal(t, 0, r.Code, r.String())
	r = p.Orbit("nats-context", "--name", "orbit-inbox-client")
	require.Equal(t, 0, r.Code, r.String())
	name, ctx := wroteContext(t, r)
	require.Equal(t, "orbit-inbox-client", name)
	clientInbox := events.InboxPrefix(creds.Public[events.IdentityClient])
	assert.Equal(t, clientInbox, ctx.InboxPrefix)

	for _, subject := range []string{clientInbox + ".>", "_INBOX.>"} {
		sub := exec.Command(natsBin, "--context", "orbit-inbox-reader", "sub", subject)
		sub.Env = append(os.Environ(), env...)
		var out testkit.SyncBuffer
		sub.Stdout, sub.Stderr = &out, &out
		require.NoError(t, sub.Start())
		waitFor(t, "the server to refuse the reader's subscription to "+subject, func() bool {
			return strings.Contains(out.String(), `Permissions Violation for Subscription to "`+subject+`"`)
		})
		_ = sub.Process.Kill()
		_ = sub.Wait()
	}

	out, code := runNATS(t, natsBin, env, "--context", "orbit-inbox-client", "request", "orbit.api.engine.info", "")
	assert.Equal(t, 0, code, out)
	assert.Contains(t, out, `"version"`, "the client's answers reach its own inbox")
	out, code = runNATS(t, natsBin, env, "--context", "orbit-inbox-reader", "--timeout", "2s", "stream", "info", events.EventsStream)
	assert.Equal(t, 0, code, out)
	assert.Contains(t, out, events.EventsStream, "the reader's JetStream answers reach its own inbox")
}
