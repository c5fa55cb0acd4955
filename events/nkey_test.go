package events_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/internal/testkit"
)

// TestAnNKeyAdmitsOnlyItsHolder: an embedded log that admits an extra nkey
// (serve --nkey) admits a client that signs with the same seed, and no
// other without one of the project's identities.
func TestAnNKeyAdmitsOnlyItsHolder(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	seed, other := filepath.Join(dir, "engine.nk"), filepath.Join(dir, "other.nk")
	public, err := events.NewNKeySeed(seed)
	require.NoError(t, err)
	assert.Regexp(t, `^U[A-Z2-7]{55}$`, public)
	_, err = events.NewNKeySeed(other)
	require.NoError(t, err)
	fi, err := os.Stat(seed)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm(), "a seed is its owner's only")
	_, err = events.NewNKeySeed(seed)
	assert.ErrorContains(t, err, "engine.nk exists; a seed is never overwritten")

	l := testkit.StartLog(t, events.Config{Listen: "127.0.0.1:0", ExtraClients: []string{seed}})
	ctx := testkit.Context(t)
	c, err := events.Dial(ctx, l.ClientURL(), events.Config{NKeySeedFile: seed})
	require.NoError(t, err, "the engine itself signed in, and so does a client with its seed")
	c.Close()
	for name, cfg := range map[string]events.Config{
		"no credentials": {},
		"another seed":   {NKeySeedFile: other},
		"a token":        {Token: "guess"},
	} {
		_, err := events.Dial(ctx, l.ClientURL(), cfg)
		assert.ErrorIs(t, err, events.ErrUnavailable, name)
		assert.ErrorContains(t, err, "Authorization Violation", name)
	}
}

func TestNKeyConfigurationErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	notASeed := filepath.Join(dir, "public.txt")
	require.NoError(t, os.WriteFile(notASeed, []byte("UAMGZSL5ZKK6CZQI7QPGFFXM7QOI6XZ5M45YFT2MJLKJFV6DDI7DEHIP\n"), 0o600))
	for name, tt := range map[string]struct {
		cfg  events.Config
		want string
	}{
		"missing file":   {events.Config{ExtraClients: []string{filepath.Join(dir, "none.nk")}}, "events: nkey seed: open " + filepath.Join(dir, "none.nk")},
		"a public key":   {events.Config{ExtraClients: []string{notASeed}}, "events: nkey seed " + notASeed},
		"token embedded": {events.Config{Token: "a-token"}, "a token works only with an external server"},
		"token and nkey": {events.Config{URL: "nats://127.0.0.1:1", NKeySeedFile: notASeed, Token: "t"}, "events: a token and an nkey seed: want one of them"},
	} {
		tt.cfg.StoreDir = filepath.Join(t.TempDir(), "nats")
		_, err := events.Open(testkit.Context(t), tt.cfg)
		require.Error(t, err, name)
		assert.Contains(t, err.Error(), tt.want, name)
	}
}
