package interpreter

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/orbitrun/orbit/assets"
)

// TestRetryDelayNeverOverflows: at the longest backoffs a job may set, a
// late attempt of either strategy waits the cap, never a negative delay
// (which would retry at once).
func TestRetryDelayNeverOverflows(t *testing.T) {
	t.Parallel()
	ten := time.Duration(assets.MaxDurationMS) * time.Millisecond
	for _, strategy := range []string{"linear", "exponential"} {
		p := assets.Retry{MaxAttempts: 1000, InitialBackoffMS: assets.MaxDurationMS / 2, BackoffCapMS: assets.MaxDurationMS, BackoffStrategy: strategy}
		for _, next := range []int{2, 3, 40, 1000} {
			d := retryDelay(p, next)
			assert.Positive(t, d, "%s attempt %d", strategy, next)
			assert.LessOrEqual(t, d, ten, "%s attempt %d", strategy, next)
		}
		assert.Equal(t, ten, retryDelay(p, 1000), strategy)
	}
}
