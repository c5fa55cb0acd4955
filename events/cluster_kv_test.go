package events_test

import (
	"fmt"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/internal/testkit"
)

// openTwoNodes opens two engines' logs on a three-node cluster, one
// connected to the node that leads the leases bucket and one to another
// node, as two engines on different machines would be.
func openTwoNodes(t *testing.T) (*events.KV, *events.KV) {
	t.Helper()
	ctx := testkit.Context(t)
	c := testkit.StartCluster(t, filepath.Join(t.TempDir(), "creds"))
	first, err := openOnCluster(t, c, c.URLs(), 0)
	require.NoError(t, err)
	first.Close()
	leader, err := c.StreamLeader(ctx, "KV_"+events.LeasesBucket)
	require.NoError(t, err)
	var kvs []*events.KV
	for _, n := range []int{leader, (leader + 1) % len(c.Nodes)} {
		l, err := openOnCluster(t, c, c.Nodes[n].URL(), 0)
		require.NoError(t, err)
		t.Cleanup(func() { l.Close() })
		kvs = append(kvs, l.Leases())
	}
	return kvs[0], kvs[1]
}

// TestKVCompareAndSetRightAfterAWriteOnACluster: a compare-and-set at the
// revision the previous write of the key returned, sent at once, through
// the same node or another, succeeds. The bucket's leader answers a write
// before it forgets that the write was in flight, and refuses a
// compare-and-set of the key in that moment with 10164; that refusal is
// neither a conflict (the revision is current) nor the log being
// unavailable.
func TestKVCompareAndSetRightAfterAWriteOnACluster(t *testing.T) {
	t.Parallel()
	ctx := testkit.Context(t)
	a, b := openTwoNodes(t)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			key := fmt.Sprintf("cas.after.%d", g)
			rev, err := a.Create(ctx, key, []byte("0"))
			if !assert.NoError(t, err) {
				return
			}
			for i := 1; i <= 40; i++ {
				kv := a
				if i%3 != 0 { // mostly through the other node, sometimes the same one twice
					kv = b
				}
				rev, err = kv.Update(ctx, key, fmt.Appendf(nil, "%d", i), rev)
				if !assert.NoError(t, err, "write %d of %s", i, key) {
					return
				}
			}
			if !assert.NoError(t, a.Delete(ctx, key, rev)) {
				return
			}
			_, err = b.Create(ctx, key, []byte("again"))
			assert.NoError(t, err, "create right after the delete of %s", key)
		}()
	}
	wg.Wait()
}

// TestKVConcurrentCompareAndSetOnACluster: two engines on different nodes
// write one key at the same revision, at once, round after round: exactly
// one wins, the other gets ErrConflict (never ErrUnavailable), and the key
// holds the winner's value.
func TestKVConcurrentCompareAndSetOnACluster(t *testing.T) {
	t.Parallel()
	ctx := testkit.Context(t)
	a, b := openTwoNodes(t)
	const key = "cas.race"
	rev, err := a.Create(ctx, key, []byte("start"))
	require.NoError(t, err)
	for round := range 60 {
		kvs := []*events.KV{a, b}
		revs := make([]uint64, 2)
		errs := make([]error, 2)
		var wg sync.WaitGroup
		for i, kv := range kvs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if round%2 == 0 {
					revs[i], errs[i] = kv.Update(ctx, key, fmt.Appendf(nil, "%d-%d", round, i), rev)
					return
				}
				revs[i], errs[i] = kv.Create(ctx, fmt.Sprintf("cas.create.%d", round), fmt.Appendf(nil, "%d-%d", round, i))
			}()
		}
		wg.Wait()
		won := -1
		for i, err := range errs {
			if err == nil {
				require.Equal(t, -1, won, "round %d: both writes succeeded", round)
				won = i
				continue
			}
			require.ErrorIs(t, err, events.ErrConflict, "round %d, writer %d", round, i)
		}
		require.NotEqual(t, -1, won, "round %d: both writes refused: %v", round, errs)
		written := key
		if round%2 == 1 {
			written = fmt.Sprintf("cas.create.%d", round)
		} else {
			rev = revs[won]
		}
		e, err := a.Latest(ctx, written)
		require.NoError(t, err)
		assert.Equal(t, fmt.Sprintf("%d-%d", round, won), string(e.Value), "round %d", round)
		assert.Equal(t, revs[won], e.Revision, "round %d", round)
	}
}
