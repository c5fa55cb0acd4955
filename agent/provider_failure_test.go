package agent_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/agent"
)

// failedHi asks p to answer "hi" and returns the *ProviderError the call
// fails with, checking that the provider's key is nowhere in it.
func failedHi(t *testing.T, p agent.Provider, key string) *agent.ProviderError {
	t.Helper()
	_, err := p.Complete(context.Background(), &agent.Request{Model: "m", Messages: []agent.Message{wireUser("hi")}})
	perr, ok := errors.AsType[*agent.ProviderError](err)
	require.True(t, ok, "want a *ProviderError, got %v", err)
	require.Equal(t, err.Error(), perr.Error(), "the provider's error, unwrapped")
	assert.NotContains(t, err.Error(), key)
	return perr
}
