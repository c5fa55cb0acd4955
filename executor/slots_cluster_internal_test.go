package executor

import (
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/assets"
	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/internal/testkit"
)

// twoEngines returns two orchestrators (not running) of different engines
// on a three-node cluster, one connected to the node leading the leases
// bucket and one to another node.
func twoEngines(t *testing.T) [2]*Orchestrator {
	t.Helper()
	ctx := testkit.Context(t)
	c := testkit.StartCluster(t, filepath.Join(t.TempDir(), "creds"))
	open := func(url, name string) *events.Log {
		l, err := events.Open(ctx, events.Config{URL: url, NKeySeedFile: c.Creds.File(events.IdentityEngine),
			Redactor: &events.Redactor{}, Name: name})
		require.NoError(t, err)
		t.Cleanup(func() { _ = l.Close() })
		return l
	}
	open(c.URLs(), "provision")
	leader, err := c.StreamLeader(ctx, "KV_"+events.LeasesBucket)
	require.NoError(t, err)
	var out [2]*Orchestrator
	for i, n := range []int{leader, (leader + 1) % len(c.Nodes)} {
		name := fmt.Sprintf("e%d", i+1)
		out[i] = NewOrchestrator(Config{Log: open(c.Nodes[n].URL(), name), Root: t.TempDir(), Engine: name, LeaseTTL: 30 * time.Second})
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

// TestReservationsRaceOnACluster: two engines on different nodes reserve
// different resources at once, round after round; each reservation holds
// (the loser of a compare-and-set reads the record again at the leader and
// applies its change there) and none fails as unavailable.
func TestReservationsRaceOnACluster(t *testing.T) {
	t.Parallel()
	ctx := testkit.Context(t)
	engines := twoEngines(t)
	var ls [2]*locks
	for i, o := range engines {
		ls[i] = newLocks(o.cfg.Log)
	}
	for round := range 20 {
		var wg sync.WaitGroup
		for i, l := range ls {
			wg.Add(1)
			go func() {
				defer wg.Done()
				holder, err := l.tryReserve(ctx, fmt.Sprintf("r%d-%d", round, i), "s", []string{fmt.Sprintf("task:t%d-%d", round, i)}, 0)
				assert.NoError(t, err, "round %d, engine %d", round, i)
				assert.Empty(t, holder, "round %d, engine %d", round, i)
			}()
		}
		wg.Wait()
	}
	cur, err := engines[0].cfg.Log.Locks().Latest(ctx, reservationsKey)
	require.NoError(t, err)
	for round := range 20 {
		for i := range ls {
			assert.Contains(t, string(cur.Value), fmt.Sprintf(`"task:t%d-%d"`, round, i))
		}
	}
}
