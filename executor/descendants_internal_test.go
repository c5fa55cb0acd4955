package executor

import (
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/internal/testkit"
	"github.com/orbitrun/orbit/interpreter"
)

// TestTheDescendantLimitHoldsAcrossEnginesOnACluster: two engines on
// different nodes of a cluster list children of one root at once, more
// than the limit between them: exactly the limit are listed, whichever
// engine asked; the rest are refused. Dropping every child removes the
// root's key.
func TestTheDescendantLimitHoldsAcrossEnginesOnACluster(t *testing.T) {
	t.Parallel()
	ctx := testkit.Context(t)
	engines := twoEngines(t)
	const limit, each = 10, 12
	var (
		mu      sync.Mutex
		listed  []string
		refused int
		wg      sync.WaitGroup
	)
	for i, o := range engines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := range each {
				child := fmt.Sprintf("e%d-c%d", i, n)
				err := o.holdDescendant(ctx, "root", "root", child, limit)
				mu.Lock()
				switch {
				case err == nil:
					listed = append(listed, child)
				case errors.Is(err, interpreter.ErrTreeFull):
					refused++
				default:
					t.Errorf("engine %d, child %d: %v", i, n, err)
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	assert.Len(t, listed, limit)
	assert.Equal(t, 2*each-limit, refused)
	rec, _, err := readTree(ctx, engines[0].cfg.Log.Leases(), "root", true)
	require.NoError(t, err)
	var runs []string
	for _, e := range rec.Runs {
		runs = append(runs, e.Run)
	}
	assert.ElementsMatch(t, listed, runs)

	require.NoError(t, engines[1].holdDescendant(ctx, "root", "root", listed[0], limit), "a child listed already stays listed")
	for i, child := range listed {
		require.NoError(t, engines[i%2].dropDescendant(ctx, "root", child))
	}
	_, err = engines[0].cfg.Log.Leases().Latest(ctx, treeKey("root"))
	assert.ErrorIs(t, err, events.ErrNotFound, "an empty tree leaves no key")
}

// TestStaleDescendantsAreDroppedWhenTheTreeIsFull: a full tree whose runs
// ended without their engine removing them (it died in between) takes a
// new child after dropping them; a tree full of live runs does not, and
// does not look again for pruneEvery.
func TestStaleDescendantsAreDroppedWhenTheTreeIsFull(t *testing.T) {
	t.Parallel()
	ctx := testkit.Context(t)
	log := testkit.StartLog(t, events.Config{})
	o := NewOrchestrator(Config{Log: log, Root: t.TempDir()})
	for n := range 3 {
		require.NoError(t, o.holdDescendant(ctx, "root", "root", fmt.Sprintf("run%d", n), 3))
	}
	require.ErrorIs(t, o.holdDescendant(ctx, "root", "root", "late", 3), interpreter.ErrTreeFull)
	_, err := log.Append(ctx, events.Event{ID: events.DecisionID(events.RunFinished, "run1"), Type: events.RunFinished, RunID: "run1", Job: "j"},
		events.RunFinishedData{State: events.StateSuccess})
	require.NoError(t, err)
	require.ErrorIs(t, o.holdDescendant(ctx, "root", "root", "late", 3), interpreter.ErrTreeFull, "looked a moment ago")

	o.mu.Lock()
	delete(o.pruned, "root")
	o.mu.Unlock()
	require.NoError(t, o.holdDescendant(ctx, "root", "root", "late", 3), "run1 has ended")
	rec, _, err := readTree(ctx, log.Leases(), "root", true)
	require.NoError(t, err)
	var runs []string
	for _, e := range rec.Runs {
		runs = append(runs, e.Run)
	}
	assert.Equal(t, []string{"run0", "run2", "late"}, runs)
}

// BenchmarkHoldAndDropDescendant is what a job.invoke and its child's end
// add to a child run: listing it below its root and removing it, on the
// embedded store with strict durability.
func BenchmarkHoldAndDropDescendant(b *testing.B) {
	ctx := testkit.Context(b)
	log := testkit.StartLog(b, events.Config{})
	o := NewOrchestrator(Config{Log: log, Root: b.TempDir()})
	for n := range 50 {
		require.NoError(b, o.holdDescendant(ctx, "root", "root", fmt.Sprintf("live%d", n), 0))
	}
	b.ResetTimer()
	for n := range b.N {
		child := fmt.Sprintf("c%d", n)
		if err := o.holdDescendant(ctx, "root", "root", child, 1000); err != nil {
			b.Fatal(err)
		}
		if err := o.dropDescendant(ctx, "root", child); err != nil {
			b.Fatal(err)
		}
	}
}
