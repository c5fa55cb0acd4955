package events

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestEveryErrorCodeIsMatchedInOrder keeps fail's order complete: a code
// missing from codeOrder would answer its kind as an internal error.
func TestEveryErrorCodeIsMatchedInOrder(t *testing.T) {
	require.Len(t, codeOrder, len(codeErrors))
	for _, c := range codeOrder {
		require.Contains(t, codeErrors, c)
	}
}
