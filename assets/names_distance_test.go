package assets_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/orbitrun/orbit/assets"
)

func TestEditDistanceCountsASwapOfNeighboursAsOneEdit(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		a, b string
		want int
	}{
		{"", "", 0},
		{"", "run", 3},
		{"retry", "retry", 0},
		{"retyr", "retry", 1},
		{"rety", "retry", 1},
		{"retryy", "retry", 1},
		{"rxtry", "retry", 1},
		{"etryr", "retry", 2},
		{"shell", "agent", 4},
		{"ca", "abc", 3},
	} {
		assert.Equal(t, c.want, assets.EditDistance(c.a, c.b), "%q ~ %q", c.a, c.b)
		assert.Equal(t, c.want, assets.EditDistance(c.b, c.a), "%q ~ %q", c.b, c.a)
	}
}
