package executor

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/assets"
	"github.com/orbitrun/orbit/internal/testkit"
)

// twoEngines returns two orchestrators (not running) of different engines
// on a three-node cluster, one connected to the node leading the leases
// bucket and one to another node.
func twoEngines(t *testing.T) [2]*Orchestrator {
	t.Helper()
	var out [2]*Orchestrator
	for i, log := range testkit.LeasesLeaderAndFollower(t) {
		name := fmt.Sprintf("e%d", i+1)
		out[i] = NewOrchestrator(Config{Log: log, Root: t.TempDir(), Engine: name, LeaseTTL: 30 * time.Second})
	}
	return out
}

// TestTwoEnginesClaimOneQueuedRunOnACluster: both engines try to admit the
// same queued run into its job's free slot at the same moment, as every
// engine does when a run is requested. Exactly one takes the slot and the
// other learns that another engine holds it for the run: never both
// (the run would start twice), never neither (it would wait for the next
// tick with its slot free), whatever the bucket's leader answered the
// loser (a conflict, or "a write of the key is in flight").
func TestTwoEnginesClaimOneQueuedRunOnACluster(t *testing.T) {
	t.Parallel()
	ctx := testkit.Context(t)
	engines := twoEngines(t)
	for round := range 40 {
		job := &assets.Job{Name: fmt.Sprintf("race%d", round)}
		var claims [2]claim
		var wg sync.WaitGroup
		for i, o := range engines {
			wg.Add(1)
			go func() {
				defer wg.Done()
				rc := &runCtl{requestFacts: requestFacts{id: fmt.Sprintf("run%d", round), job: job}}
				claims[i] = o.claimSlot(ctx, rc, slotKeys(job), len(slotKeys(job)))
			}()
		}
		wg.Wait()
		taken := 0
		for _, c := range claims {
			if c == claimTaken {
				taken++
			} else {
				assert.Equal(t, claimElsewhere, c, "round %d: the engine that did not take the slot", round)
			}
		}
		require.Equal(t, 1, taken, "round %d: engines that took the slot (%v)", round, claims)
	}
}
