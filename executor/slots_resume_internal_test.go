package executor

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/assets"
	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/internal/testkit"
)

// TestAnEngineKeepsOffTheSlotAnotherTookForTheRunsResumption: engine e1
// ran a run that ended budget_exhausted, and its budget was raised before
// e1 gave the run's slot back. Engine e2, following the raise, found the
// slot's run finished and its lease gone, and took the slot for the
// resumed run. e1's late release must not free e2's slot: e1 would then
// take a slot of its own and start the run a second time, and a third run
// could take the freed slot while the resumed one runs. A slot e1 holds
// itself is freed as before.
func TestAnEngineKeepsOffTheSlotAnotherTookForTheRunsResumption(t *testing.T) {
	t.Parallel()
	log := testkit.StartLog(t, events.Config{})
	ctx := testkit.Context(t)
	job := &assets.Job{Name: "resume_slot"}
	key := slotKey(job.Name, 0)
	o := NewOrchestrator(Config{Log: log, Engine: "e1"})

	hold := func(run, engine string) {
		t.Helper()
		value, err := json.Marshal(slotRecord{Run: run, Engine: engine, Taken: time.Now().UTC()})
		require.NoError(t, err)
		if cur, err := log.Leases().Get(ctx, key); err == nil {
			_, err = log.Leases().Update(ctx, key, value, cur.Revision)
			require.NoError(t, err)
			return
		}
		_, err = log.Leases().Create(ctx, key, value)
		require.NoError(t, err)
	}
	held := func() bool {
		_, err := log.Leases().Get(ctx, key)
		if errors.Is(err, events.ErrNotFound) {
			return false
		}
		require.NoError(t, err)
		return true
	}
	record := func(run, typ string, payload any) {
		t.Helper()
		_, err := log.Append(ctx, events.Event{Type: typ, RunID: run, Job: job.Name}, payload)
		require.NoError(t, err)
	}

	raised := events.NewID()
	record(raised, events.RunFinished, events.RunFinishedData{State: events.StateBudgetExhausted})
	record(raised, events.RunBudgetRaised, events.RunBudgetRaisedData{Raise: 1, MaxTokens: 5000})
	hold(raised, "e2")
	o.giveSlot(ctx, &runCtl{requestFacts: requestFacts{id: raised, job: job}, slot: key})
	assert.True(t, held(), "e1 freed the slot e2 took for the resumed run")
	o.giveSlot(ctx, &runCtl{requestFacts: requestFacts{id: raised, job: job}})
	assert.True(t, held(), "e1 freed the slot e2 took for the resumed run (a run e1 took over)")

	hold(raised, "e1")
	o.giveSlot(ctx, &runCtl{requestFacts: requestFacts{id: raised, job: job}, slot: key})
	assert.False(t, held(), "e1 kept its own slot")

	// A run taken over from a dead engine frees that engine's slot.
	over := events.NewID()
	record(over, events.RunFinished, events.RunFinishedData{State: events.StateSuccess})
	hold(over, "dead")
	o.giveSlot(ctx, &runCtl{requestFacts: requestFacts{id: over, job: job}})
	assert.False(t, held(), "the slot of a run taken over was kept")
}
