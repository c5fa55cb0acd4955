package projector

import (
	"fmt"

	"github.com/orbitrun/orbit/events"
)

// Runs that a budget raise reopens. The metrics view counts each finished
// run once, under its last end: orbit_runs (job, state) is a gauge of runs
// by state, so a run that ended budget_exhausted and was resumed leaves
// budget_exhausted when its budget is raised (the runs view lists it as
// running again until it ends) and is counted under the state it ends in
// next. The duration counter, orbit_run_duration_seconds_total, may not go
// down: a resumed run's next run.finished measures from its run.started, so
// only the time past the end already counted is added.
//
// The view keeps, per run whose last end was budget_exhausted, that end's
// duration (key exhausted/<run>), and deletes it at the run's next end.

const prefixExhausted = "exhausted/"

func exhaustedKey(run string) string { return prefixExhausted + run }

// exhaustedRun is what the metrics view keeps of a run whose last end was
// budget_exhausted.
type exhaustedRun struct {
	// DurationMS is the run's duration the view has counted.
	DurationMS int64 `json:"duration_ms"`
	// Reopened is set by the raise that took the run out of its
	// budget_exhausted count.
	Reopened bool `json:"reopened,omitempty"`
}

// exhausted returns the record of run, nil when it has none. Unlike
// record, it creates nothing.
func (b *metricsBatch) exhausted(run string) (*exhaustedRun, error) {
	key := exhaustedKey(run)
	if r, ok := b.records[key]; ok {
		return r.(*exhaustedRun), nil
	}
	raw := b.b.Get([]byte(key))
	if raw == nil {
		return nil, nil
	}
	r := new(exhaustedRun)
	if err := decodeStored(raw, r); err != nil {
		return nil, fmt.Errorf("stored metrics %q: %w", key, err)
	}
	b.records[key] = r
	return r, nil
}

// runBudgetRaised takes a run that ended budget_exhausted out of that
// count: it is running again.
func (b *metricsBatch) runBudgetRaised(ev events.Event, _ *events.RunBudgetRaisedData) error {
	x, err := b.exhausted(ev.RunID)
	if err != nil || (x != nil && x.Reopened) {
		return err
	}
	j, err := record[JobMetrics](b, jobMetricsKey(ev.Job))
	if err != nil {
		return err
	}
	if j.States[events.StateBudgetExhausted] == 0 {
		return nil // not counted here: nothing to take back
	}
	j.Runs--
	if j.States[events.StateBudgetExhausted]--; j.States[events.StateBudgetExhausted] == 0 {
		delete(j.States, events.StateBudgetExhausted)
	}
	if x != nil {
		x.Reopened = true
	}
	return nil
}

// countedDuration returns how much of a finishing run's duration the view
// has counted already (at the end a raise reopened), and records the new
// end: kept while it is budget_exhausted, forgotten otherwise.
func (b *metricsBatch) countedDuration(ev events.Event, d *events.RunFinishedData) (int64, error) {
	x, err := b.exhausted(ev.RunID)
	if err != nil {
		return 0, err
	}
	var counted int64
	if x != nil && x.Reopened {
		counted = x.DurationMS
	}
	switch {
	case d.State == events.StateBudgetExhausted:
		b.records[exhaustedKey(ev.RunID)] = &exhaustedRun{DurationMS: max(d.DurationMS, counted)}
	case x != nil:
		b.records[exhaustedKey(ev.RunID)] = (*exhaustedRun)(nil)
	}
	return counted, nil
}
