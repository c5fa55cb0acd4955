package console_test

import (
	"html"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/engine"
	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/internal/testkit"
)

// TestARunPageNamesWhoSignedItsRequests: a run submitted and cancelled
// with the CLI shows on its page who asked, as each request named it, and
// beside it the identity the server authenticated: the project's client.
func TestARunPageNamesWhoSignedItsRequests(t *testing.T) {
	t.Parallel()
	p := testkit.NewProject(t)
	c := serveConsole(t, p)
	creds, err := events.EnsureCreds(engine.CredsDir(p.Root))
	require.NoError(t, err)
	signed := "signed by client " + creds.Public[events.IdentityClient]

	id := startJob(t, p, "example_slow")
	r := p.Orbit("run", "cancel", id, "--reason", "enough")
	require.Equal(t, 0, r.Code, r.String())
	waitFor(t, "the run to end", func() bool { return showRun(t, p, id).State == events.StateCancelled })

	code, body := c.get(t, "/runs/"+id)
	require.Equal(t, 200, code)
	body = html.UnescapeString(body)
	assert.Regexp(t, `<dd class="requester">cli:\S+, `+signed+`</dd>`, body)
	assert.Regexp(t, `<dd class="cancel-request">requested by cli:\S+, `+signed+`: enough</dd>`, body)
}
