package events_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/internal/testkit"
)

// TestEachIdentityHasItsOwnInbox: a client and the reader each sign in with
// an inbox of their own and may subscribe to no other, nor to the shared
// _INBOX.>, so neither reads the other's answers; the client's API calls
// and the reader's feed still work through theirs.
func TestEachIdentityHasItsOwnInbox(t *testing.T) {
	t.Parallel()
	ctx := testkit.Context(t)
	l := helloLog(ctx, t)
	creds, err := events.EnsureCreds(l.CredsDir())
	require.NoError(t, err)

	client := dialAs(ctx, t, l, events.IdentityClient)
	var answer string
	require.NoError(t, client.Request(ctx, "engine.info", nil, &answer), "the client's answers reach its own inbox")
	assert.Equal(t, "hello", answer)
	reader := dialAs(ctx, t, l, events.IdentityReader)
	evs, err := reader.Read(ctx, events.FollowOptions{})
	require.NoError(t, err, "the reader's JetStream answers reach its own inbox")
	assert.Len(t, evs, 1)

	clientInbox := events.InboxPrefix(creds.Public[events.IdentityClient]) + ".>"
	readerInbox := events.InboxPrefix(creds.Public[events.IdentityReader]) + ".>"
	for _, tt := range []struct {
		id            events.Identity
		own, other    string
		otherIdentity events.Identity
	}{
		{events.IdentityReader, readerInbox, clientInbox, events.IdentityClient},
		{events.IdentityClient, clientInbox, readerInbox, events.IdentityReader},
	} {
		o, err := testkit.DialOutsider(t, l.ClientURL(), creds.File(tt.id))
		require.NoError(t, err)
		assert.True(t, o.SubscribeRefused(tt.other), "the %s may not read the %s's inbox", tt.id, tt.otherIdentity)
		assert.True(t, o.SubscribeRefused("_INBOX.>"), "the %s may not read the shared inbox", tt.id)
		assert.False(t, o.SubscribeRefused(tt.own), "the %s reads its own", tt.id)
	}
}
