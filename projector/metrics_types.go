package projector

import (
	"strconv"

	"github.com/orbitrun/orbit/events"
)

// StepDurationBucketsMS are the upper bounds, in milliseconds, of the
// buckets of the step duration histograms by activity type: Prometheus'
// default buckets from 5 ms to 10 s, then up to 10 minutes.
var StepDurationBucketsMS = []int64{
	5, 10, 25, 50, 100, 250, 500,
	1000, 2500, 5000, 10000, 30000, 60000, 120000, 300000, 600000,
}

// ActivityTypeMetrics is the duration histogram of the finished step
// attempts of one activity type, as step.started records it (shell,
// deterministic, agent_loop, parallel, fan_out, loop, wait, …).
type ActivityTypeMetrics struct {
	Count           int64 `json:"count"`
	TotalDurationMS int64 `json:"total_duration_ms"`
	// Buckets are cumulative, as Prometheus' are: one per bound of
	// StepDurationBucketsMS, each counting the attempts that took at most
	// that long. Count is the +Inf bucket.
	Buckets []DurationBucket `json:"buckets"`
	States  map[string]int64 `json:"states,omitempty"`
}

// DurationBucket counts the attempts that took at most LeMS milliseconds.
type DurationBucket struct {
	LeMS  int64 `json:"le_ms"`
	Count int64 `json:"count"`
}

// observe adds one finished attempt of ms milliseconds in state.
func (a *ActivityTypeMetrics) observe(ms int64, state string) {
	if a.Buckets == nil {
		a.Buckets = make([]DurationBucket, len(StepDurationBucketsMS))
		for i, le := range StepDurationBucketsMS {
			a.Buckets[i].LeMS = le
		}
	}
	a.Count++
	a.TotalDurationMS += ms
	for i := range a.Buckets {
		if ms <= a.Buckets[i].LeMS {
			a.Buckets[i].Count++
		}
	}
	inc(&a.States, state)
}

// startedStep is what the metrics view keeps of a step attempt between its
// step.started and its step.finished: the activity type, which only
// step.started records. The record is deleted when the attempt finishes.
type startedStep struct {
	ActivityType string `json:"activity_type"`
}

// noActivityType is the activity type of a step.started that records none.
const noActivityType = "<none>"

func startedStepKey(ev events.Event, attempt int) string {
	return prefixStarted + ev.RunID + "\x00" + ev.StepKey + "\x00" + strconv.Itoa(attempt)
}
func activityTypeKey(typ string) string { return prefixActivityType + typ }

func (b *metricsBatch) stepStarted(ev events.Event, d *events.StepStartedData) error {
	typ := d.ActivityType
	if typ == "" {
		typ = noActivityType
	}
	b.records[startedStepKey(ev, d.Attempt)] = &startedStep{ActivityType: typ}
	return nil
}

// countActivityType adds a finished attempt to the histogram of the
// activity type its step.started recorded, and forgets the start. An
// attempt with no step.started (a retry that reused an earlier run's
// output ran nothing) is in no histogram.
func (b *metricsBatch) countActivityType(ev events.Event, d *events.StepFinishedData) error {
	key := startedStepKey(ev, d.Attempt)
	s, err := record[startedStep](b, key)
	if err != nil {
		return err
	}
	b.records[key] = (*startedStep)(nil)
	if s == nil || s.ActivityType == "" {
		return nil
	}
	a, err := record[ActivityTypeMetrics](b, activityTypeKey(s.ActivityType))
	if err != nil {
		return err
	}
	a.observe(d.DurationMS, d.State)
	return nil
}
