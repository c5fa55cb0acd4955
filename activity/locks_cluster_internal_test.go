package activity

import (
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/internal/testkit"
)

// TestReservationsRaceOnACluster: two engines on different nodes reserve
// different resources at once, round after round; each reservation holds
// (the loser of a compare-and-set reads the record again at the leader and
// applies its change there) and none fails as unavailable.
func TestReservationsRaceOnACluster(t *testing.T) {
	t.Parallel()
	ctx := testkit.Context(t)
	logs := testkit.LeasesLeaderAndFollower(t)
	var ls [2]*locks
	for i, log := range logs {
		ls[i] = newLocks(log)
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
	cur, err := logs[0].Locks().Latest(ctx, reservationsKey)
	require.NoError(t, err)
	for round := range 20 {
		for i := range ls {
			assert.Contains(t, string(cur.Value), fmt.Sprintf(`"task:t%d-%d"`, round, i))
		}
	}
}
