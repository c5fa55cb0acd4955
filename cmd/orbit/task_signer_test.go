package main_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/events"
)

// TestTaskWritesRecordWhoSignedThem: start, update and archive through the
// API record the client key that signed each request, as task add does;
// orbit task show --json has it in each transition.
func TestTaskWritesRecordWhoSignedThem(t *testing.T) {
	t.Parallel()
	p, _ := repoProject(t, map[string]string{"greet.txt": "hello\n"})
	for _, args := range [][]string{
		{"task", "add", "--title", "Greet"},
		{"task", "start", "T-1"},
		{"task", "update", "T-1", "--status", "blocked", "--reason", "waiting"},
		{"task", "archive", "T-1"},
	} {
		r := p.Orbit(args...)
		require.Equal(t, 0, r.Code, r.String())
	}
	signer := &events.Signer{Identity: events.IdentityClient, Key: clientKey(t, p)}
	v := taskView(t, p, "T-1")
	require.Len(t, v.History, 4)
	for _, h := range v.History {
		assert.Equal(t, signer, h.Signer, "%s → %s", h.From, h.To)
	}
}
