package projector_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/projector"
)

// A batch that is not full waits for more events: events appended one at
// a time within the linger share one commit. A caller that waits for the
// views ends the linger at once, so it waits no longer than it would have
// without it.
func TestALingeringBatchSharesACommitAndAWaiterEndsIt(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	p := e.open(projector.Config{Linger: time.Minute})
	commits := recordCommits(p)
	e.start(p)

	var last uint64
	for i := range 3 {
		last = e.append(events.Event{Type: events.RunRequested, RunID: runID(i)}, events.RunRequestedData{JobName: "ci"})
		time.Sleep(20 * time.Millisecond)
	}
	assert.Empty(t, commits(), "nothing committed while the batch lingers and no one waits")

	// Far less than the minute the batch would linger.
	ctx, cancel := context.WithTimeout(e.ctx, 10*time.Second)
	defer cancel()
	require.NoError(t, p.WaitFor(ctx, last), "the waiter ended the linger")
	assert.Equal(t, []uint64{last}, commits(), "the three events in one commit")
}
