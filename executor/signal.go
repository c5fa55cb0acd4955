package executor

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/orbitrun/orbit/events"
)

// Gate is a step attempt of a run that waits for a signal.
type Gate struct {
	StepKey  string     `json:"step_key"`
	Attempt  int        `json:"attempt"`
	Signal   string     `json:"signal"`
	Deadline *time.Time `json:"deadline,omitempty"`
}

// Signalled says which gates a signal opened.
type Signalled struct {
	RunID  string `json:"run_id"`
	Signal string `json:"signal"`
	Gates  []Gate `json:"gates"`
}

// Signal delivers a signal with its data to every step of a run that is
// waiting for it now, by appending run.signalled for each; the run's
// interpreter finishes those steps with data as their output. Sending the
// same signal twice to one waiting step records it once. Each records who
// signed the API request ctx serves, if any (events.RequestSigner).
//
// It refuses, with an error matching events.ErrNotFound, a run the log
// does not have, and with one matching ErrNotWaiting and
// events.ErrInvalidRequest a run that waits for no such signal (finished,
// not started, or its waiting steps wait for others, or their deadline
// passed): the error says what the run is waiting for. Nothing is written
// then.
func Signal(ctx context.Context, log *events.Log, runID, signal string, data any, requester string) (*Signalled, error) {
	gates, state, err := openGates(ctx, log, runID)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	var open, match []Gate
	for _, g := range gates {
		if g.Deadline != nil && now.After(*g.Deadline) {
			continue // timed out; the interpreter records it
		}
		open = append(open, g)
		if g.Signal == signal {
			match = append(match, g)
		}
	}
	if len(match) == 0 {
		return nil, notWaiting(runID, signal, state, open)
	}
	for _, g := range match {
		_, err := log.Append(ctx, events.Event{
			ID:       signalID(runID, g.StepKey, g.Attempt),
			Type:     events.RunSignalled,
			RunID:    runID,
			StepKey:  g.StepKey,
			ParentID: stepEventID(events.StepStarted, runID, g.StepKey, g.Attempt),
		}, events.RunSignalledData{Attempt: g.Attempt, Signal: signal, Data: data, Requester: requester, Signer: events.RequestSigner(ctx)})
		if err != nil {
			return nil, fmt.Errorf("recording signal %s for run %s: %w", signal, runID, err)
		}
	}
	return &Signalled{RunID: runID, Signal: signal, Gates: match}, nil
}

// openGates returns the gates of a run that wait for a signal now, in the
// order they began, with the run's state (pending, running or terminal).
func openGates(ctx context.Context, log *events.Log, runID string) ([]Gate, string, error) {
	evs, err := readRun(ctx, log, runID, events.RunRequested, events.RunStarted, events.RunFinished,
		events.StepStarted, events.StepFinished, events.RunSignalled)
	if err != nil {
		return nil, "", err
	}
	state := ""
	var gates []Gate
	closed := map[string]bool{}
	for _, ev := range evs {
		switch ev.Type {
		case events.RunRequested:
			state = events.StatePending
		case events.RunStarted:
			state = events.StateRunning
		case events.RunFinished:
			var d events.RunFinishedData
			if err := ev.Decode(&d); err != nil {
				return nil, "", err
			}
			state = d.State
		case events.StepStarted:
			var d events.StepStartedData
			if err := ev.Decode(&d); err != nil {
				return nil, "", err
			}
			if d.Wait != nil {
				gates = append(gates, Gate{StepKey: ev.StepKey, Attempt: d.Attempt, Signal: d.Wait.Signal, Deadline: d.Wait.Deadline})
			}
		case events.StepFinished:
			var d events.StepFinishedData
			if err := ev.Decode(&d); err != nil {
				return nil, "", err
			}
			closed[gateKey(ev.StepKey, d.Attempt)] = true
		case events.RunSignalled:
			var d events.RunSignalledData
			if err := ev.Decode(&d); err != nil {
				return nil, "", err
			}
			closed[gateKey(ev.StepKey, d.Attempt)] = true
		}
	}
	if state == "" {
		return nil, "", refuse([]error{events.ErrNotFound}, "no run %s (orbit run history lists the runs)", runID)
	}
	if events.Terminal(state) {
		return nil, state, nil
	}
	gates = slices.DeleteFunc(gates, func(g Gate) bool { return closed[gateKey(g.StepKey, g.Attempt)] })
	return gates, state, nil
}

func gateKey(key string, attempt int) string { return fmt.Sprintf("%s\x00%d", key, attempt) }

// notWaiting is the refusal of a signal nobody waits for: it says what the
// run waits for instead.
func notWaiting(runID, signal, state string, open []Gate) error {
	var what string
	switch {
	case events.Terminal(state):
		what = fmt.Sprintf("it has finished (%s) and waits for nothing", state)
	case len(open) == 0:
		what = fmt.Sprintf("it is %s and waits for no signal", state)
	default:
		parts := make([]string, len(open))
		for i, g := range open {
			parts[i] = DescribeGate(g)
		}
		what = "it is waiting for " + strings.Join(parts, "; ")
	}
	return refuse([]error{events.ErrInvalidRequest, ErrNotWaiting}, "run %s is not waiting for signal %s; %s", runID, signal, what)
}

// DescribeGate says in words what a gate waits for: "signal approved (step
// approve, until 2026-03-01T09:00:30Z)".
func DescribeGate(g Gate) string {
	until := "no deadline"
	if g.Deadline != nil {
		until = "until " + g.Deadline.UTC().Format(time.RFC3339)
	}
	return fmt.Sprintf("signal %s (step %s, %s)", g.Signal, g.StepKey, until)
}
