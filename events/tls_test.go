package events_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/internal/testkit"
)

// TestTLSListener: an embedded server with ListenTLS serves TLS only, and
// with a CA only to clients that show a certificate it signed. A client
// that trusts the CA and shows one reads the log; each other client is
// refused with ErrTLS (and ErrUnavailable), never taken for a server that
// is not there. The engine's own connection, in process, needs none.
func TestTLSListener(t *testing.T) {
	t.Parallel()
	ctx := testkit.Context(t)
	pki, rogue := testkit.NewPKI(t), testkit.NewPKI(t)
	l := testkit.StartLog(t, events.Config{Listen: "127.0.0.1:0",
		ListenTLS: &events.TLSFiles{Cert: pki.ServerCert, Key: pki.ServerKey, CA: pki.CA}})
	_, err := l.Append(ctx, events.Event{Type: events.RunRequested, RunID: "R1"}, events.RunRequestedData{})
	require.NoError(t, err, "the engine's own connection")
	url := l.ClientURL()
	require.True(t, strings.HasPrefix(url, "tls://"), url)
	seed := events.CredsFile(l.CredsDir(), events.IdentityReader)

	good := &events.TLSFiles{CA: pki.CA, Cert: pki.ClientCert, Key: pki.ClientKey}
	reader, err := events.Dial(ctx, url, events.Config{NKeySeedFile: seed, TLS: good})
	require.NoError(t, err)
	evs, err := reader.Read(ctx, events.FollowOptions{})
	require.NoError(t, err)
	require.Len(t, evs, 1)
	reader.Close()

	for name, tls := range map[string]*events.TLSFiles{
		"no TLS configuration":      nil,
		"no client certificate":     {CA: pki.CA},
		"another CA's certificate":  {CA: pki.CA, Cert: rogue.ClientCert, Key: rogue.ClientKey},
		"a CA that did not sign it": {CA: rogue.CA, Cert: pki.ClientCert, Key: pki.ClientKey},
	} {
		_, err := events.Dial(ctx, url, events.Config{NKeySeedFile: seed, TLS: tls})
		assert.ErrorIs(t, err, events.ErrTLS, name)
		assert.ErrorIs(t, err, events.ErrUnavailable, name)
	}

	_, err = events.Dial(ctx, url, events.Config{NKeySeedFile: seed, TLS: &events.TLSFiles{CA: filepath.Join(t.TempDir(), "missing.pem")}})
	assert.ErrorIs(t, err, events.ErrTLS, "a CA file that cannot be read")
	_, err = events.Open(ctx, events.Config{StoreDir: filepath.Join(t.TempDir(), "nats"), Listen: "127.0.0.1:0", Redactor: &events.Redactor{},
		ListenTLS: &events.TLSFiles{Cert: pki.ServerCert, Key: pki.ClientKey}})
	assert.ErrorIs(t, err, events.ErrTLS, "a key that is not the certificate's")
}
