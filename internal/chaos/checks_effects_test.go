package chaos_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/orbitrun/orbit/events"
)

// history builds the events of a run from compact steps, for testing the
// effects check on histories written by hand.
type history []events.Event

func (h history) with(typ, key string, payload any) history {
	data, err := json.Marshal(payload)
	if err != nil {
		panic(err)
	}
	return append(h, events.Event{Type: typ, StepKey: key, Data: data})
}

// shellStep is a shell step attempt dispatched, started once per delivery
// (the later ones marked redelivered when redelivered is set) and finished.
func shellStep(h history, key string, attempt, starts int, redelivered bool) history {
	h = h.with(events.StepStarted, key, events.StepStartedData{Attempt: attempt, ActivityType: "shell"})
	for i := range starts {
		h = h.with(events.ActivityStarted, key, events.ActivityStartedData{
			Attempt: attempt, ActivityType: "shell", Delivery: 1, Redelivered: redelivered && i > 0})
	}
	return h.with(events.StepFinished, key, events.StepFinishedData{Attempt: attempt, State: events.StateSuccess})
}

// TestCheckEffects feeds the effects check good and bad histories: a
// check that cannot fail proves nothing.
func TestCheckEffects(t *testing.T) {
	t.Parallel()
	once := shellStep(shellStep(nil, "a", 1, 1, false), "b", 1, 1, false)
	cases := []struct {
		name    string
		evs     history
		effects []string
		ok      bool
	}{
		{"each step ran once", once, []string{"a#1", "b#1"}, true},
		{"a finished step ran again", once, []string{"a#1", "a#1", "b#1"}, false},
		{"a finished step never ran", once, []string{"b#1"}, false},
		{"a step the log never dispatched ran", once, []string{"a#1", "b#1", "c#1"}, false},
		{"a redelivered step ran twice", shellStep(nil, "a", 1, 2, true), []string{"a#1", "a#1"}, true},
		{"two starts are a redelivery on record", shellStep(nil, "a", 1, 2, false), []string{"a#1", "a#1"}, true},
		{"a redelivered step ran once", shellStep(nil, "a", 1, 2, true), []string{"a#1"}, true},
		{"more runs than starts", shellStep(nil, "a", 1, 2, true), []string{"a#1", "a#1", "a#1"}, false},
		{"a run without activity.started", shellStep(nil, "a", 1, 0, false), []string{"a#1"}, false},
		{"attempts are told apart", shellStep(shellStep(nil, "a", 1, 1, false), "a", 2, 1, false), []string{"a#1", "a#2"}, true},
		{"a step that never finished", history(nil).with(events.StepStarted, "a", events.StepStartedData{Attempt: 1, ActivityType: "shell"}), []string{"a#1"}, false},
		{"a step that finished twice", shellStep(nil, "a", 1, 1, false).with(events.StepFinished, "a", events.StepFinishedData{Attempt: 1}), []string{"a#1"}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := checkEffects(c.evs, c.effects, false)
			if c.ok {
				assert.NoError(t, err)
			} else {
				assert.Error(t, err)
			}
		})
	}
}

// TestCheckEffectsUnderProtocol5: on an embedded store a command's first
// execution has no activity.started, so an attempt may run once more
// than its starts, and a second run needs a redelivery on record; on a
// shared server every execution keeps its start.
func TestCheckEffectsUnderProtocol5(t *testing.T) {
	t.Parallel()
	v5 := history(nil).with(events.RunRequested, "", events.RunRequestedData{Protocol: 5})
	repeat := shellStep(v5, "a", 1, 0, false).with(events.ActivityStarted, "a",
		events.ActivityStartedData{Attempt: 1, ActivityType: "shell", Delivery: 2, Redelivered: true})
	cases := []struct {
		name    string
		evs     history
		effects []string
		shared  bool
		ok      bool
	}{
		{"a first execution without its start", shellStep(v5, "a", 1, 0, false), []string{"a#1"}, false, true},
		{"ran twice without a start", shellStep(v5, "a", 1, 0, false), []string{"a#1", "a#1"}, false, false},
		{"the first and a redelivered repeat", repeat, []string{"a#1", "a#1"}, false, true},
		{"a repeat not marked redelivered", shellStep(v5, "a", 1, 1, false), []string{"a#1", "a#1"}, false, false},
		{"one repeat on record, two ran", repeat, []string{"a#1", "a#1", "a#1"}, false, false},
		{"on a shared server every execution has its start", shellStep(v5, "a", 1, 0, false), []string{"a#1"}, true, false},
		{"protocol 4 has the first start", shellStep(history(nil).with(events.RunRequested, "", events.RunRequestedData{Protocol: 4}), "a", 1, 0, false), []string{"a#1"}, false, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := checkEffects(c.evs, c.effects, c.shared)
			if c.ok {
				assert.NoError(t, err)
			} else {
				assert.Error(t, err)
			}
		})
	}
}

// TestCheckStepEvents feeds the step protocol check good and bad
// histories.
func TestCheckStepEvents(t *testing.T) {
	t.Parallel()
	requested := func(protocol int) history {
		return history(nil).with(events.RunRequested, "", events.RunRequestedData{Protocol: protocol})
	}
	ran := func(h history, worker string) history {
		return h.with(events.StepStarted, "a", events.StepStartedData{Attempt: 1, ActivityType: "shell"}).
			with(events.ActivityStarted, "a", events.ActivityStartedData{Attempt: 1, ActivityType: "shell", Delivery: 1}).
			with(events.StepFinished, "a", events.StepFinishedData{Attempt: 1, State: events.StateSuccess, Worker: worker, Delivery: 1})
	}
	deadLetter := requested(3).with(events.StepStarted, "a", events.StepStartedData{Attempt: 1, ActivityType: "shell"}).
		with(events.ActivityStarted, "a", events.ActivityStartedData{Attempt: 1, ActivityType: "shell", Delivery: 5, Redelivered: true}).
		with(events.StepFinished, "a", events.StepFinishedData{Attempt: 1, State: events.StateFailed, Error: &events.ErrorInfo{Kind: events.KindDeadLetter}})
	cases := []struct {
		name string
		evs  history
		ok   bool
	}{
		{"protocol 3, its worker named", ran(requested(3), "w1"), true},
		{"protocol 3, no worker named", ran(requested(3), ""), false},
		{"protocol 3 with an activity.finished", ran(requested(3), "w1").with(events.ActivityFinished, "a", events.ActivityFinishedData{Attempt: 1}), false},
		{"protocol 3, a dead letter names no worker", deadLetter, true},
		{"protocol 2 writes activity.finished", ran(requested(2), "").with(events.ActivityFinished, "a", events.ActivityFinishedData{Attempt: 1}), true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := checkStepEvents(c.evs)
			if c.ok {
				assert.NoError(t, err)
			} else {
				assert.Error(t, err)
			}
		})
	}
}
