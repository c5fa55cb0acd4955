package executor

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/interpreter"
)

// Gate is a step attempt of a run that waits for a signal.
type Gate struct {
	StepKey  string     `json:"step_key"`
	Attempt  int        `json:"attempt"`
	Signal   string     `json:"signal"`
	Deadline *time.Time `json:"deadline,omitempty"`
	// RunID is set for a gate of another run than the one asked about:
	// a child run (job.invoke) the run waits for, or a child of one;
	// Via is the step of the run asked about that waits for that child.
	RunID string `json:"run_id,omitempty"`
	Via   string `json:"via,omitempty"`

	timeout int // the gate's timeout_seconds, from which its start is known
}

// Gates are the gates a run waits at now: its own, and those of the
// child runs its steps wait for (at any depth), which a signal must be
// sent to instead.
type Gates struct {
	RunID string `json:"run_id"`
	State string `json:"state"`
	Gates []Gate `json:"gates"`
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
		var inChildren []Gate
		if len(open) == 0 && state == events.StateRunning {
			if inChildren, err = childGates(ctx, log, runID, 0); err != nil {
				return nil, err
			}
		}
		return nil, notWaiting(runID, signal, state, open, inChildren)
	}
	for _, g := range match {
		_, err := log.Append(ctx, events.Event{
			ID:       interpreter.SignalID(runID, g.StepKey, g.Attempt),
			Type:     events.RunSignalled,
			RunID:    runID,
			StepKey:  g.StepKey,
			ParentID: interpreter.StepEventID(events.StepStarted, runID, g.StepKey, g.Attempt),
		}, events.RunSignalledData{Attempt: g.Attempt, Signal: signal, Data: data, Requester: requester, Signer: events.RequestSigner(ctx)})
		if err != nil {
			return nil, fmt.Errorf("recording signal %s for run %s: %w", signal, runID, err)
		}
	}
	return &Signalled{RunID: runID, Signal: signal, Gates: match}, nil
}

// WaitingAt returns the gates a run waits at now (see Gates): its own
// open gates, and, when it has none and is running, the open gates of the
// child runs its steps wait for. A run the log does not have is an error
// matching events.ErrNotFound.
func WaitingAt(ctx context.Context, log *events.Log, runID string) (*Gates, error) {
	gates, state, err := openGates(ctx, log, runID)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	gates = slices.DeleteFunc(gates, func(g Gate) bool { return g.Deadline != nil && now.After(*g.Deadline) })
	if len(gates) == 0 && state == events.StateRunning {
		if gates, err = childGates(ctx, log, runID, 0); err != nil {
			return nil, err
		}
	}
	return &Gates{RunID: runID, State: state, Gates: gates}, nil
}

// maxGateDepth bounds how deep childGates looks: past it the engine's
// max_child_depth would have refused the child.
const maxGateDepth = 64

// maxChildGates bounds how many child gates childGates reports (a fan-out
// of job.invoke may wait for thousands of children).
const maxChildGates = 20

// childGates returns the open gates of the running child runs that runID's
// steps wait for now, and of their children, each with the child's run id
// and the step of runID that waits for it; at most maxChildGates.
func childGates(ctx context.Context, log *events.Log, runID string, depth int) ([]Gate, error) {
	if depth >= maxGateDepth {
		return nil, nil
	}
	children, err := waitedChildren(ctx, log, runID)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	var out []Gate
	for _, c := range children {
		gates, state, err := openGates(ctx, log, c.run)
		if errors.Is(err, events.ErrNotFound) {
			continue // requested a moment from now
		}
		if err != nil {
			return nil, err
		}
		if state != events.StateRunning {
			continue
		}
		for _, g := range gates {
			if g.Deadline != nil && now.After(*g.Deadline) {
				continue
			}
			g.RunID, g.Via = c.run, c.step
			out = append(out, g)
		}
		deeper, err := childGates(ctx, log, c.run, depth+1)
		if err != nil {
			return nil, err
		}
		for _, g := range deeper {
			g.Via = c.step
			out = append(out, g)
		}
		if len(out) >= maxChildGates {
			return out[:maxChildGates], nil
		}
	}
	return out, nil
}

// waitedChild is a child run a step of a run waits for now.
type waitedChild struct{ run, step string }

// waitedChildren returns the child runs runID's steps wait for now: the
// child of every step attempt whose step.started names one and that has
// not finished, in the order they began.
func waitedChildren(ctx context.Context, log *events.Log, runID string) ([]waitedChild, error) {
	evs, err := readRun(ctx, log, runID, events.StepStarted, events.StepFinished)
	if err != nil {
		return nil, err
	}
	var started []waitedChild
	attempts := map[string]bool{}
	closed := map[string]bool{}
	for _, ev := range evs {
		switch ev.Type {
		case events.StepStarted:
			var d events.StepStartedData
			if err := ev.Decode(&d); err != nil {
				return nil, err
			}
			if d.ChildRunID != "" {
				k := gateKey(ev.StepKey, d.Attempt)
				attempts[k] = true
				started = append(started, waitedChild{run: d.ChildRunID, step: k})
			}
		case events.StepFinished:
			var d events.StepFinishedData
			if err := ev.Decode(&d); err != nil {
				return nil, err
			}
			closed[gateKey(ev.StepKey, d.Attempt)] = true
		}
	}
	var out []waitedChild
	for _, c := range started {
		if !closed[c.step] {
			key, _, _ := strings.Cut(c.step, "\x00")
			out = append(out, waitedChild{run: c.run, step: key})
		}
	}
	return out, nil
}

// openGates returns the gates of a run that wait for a signal now, in the
// order they began, with the run's state (pending, running or terminal).
func openGates(ctx context.Context, log *events.Log, runID string) ([]Gate, string, error) {
	evs, err := readRun(ctx, log, runID, events.RunRequested, events.RunStarted, events.RunFinished,
		events.StepStarted, events.StepFinished, events.RunSignalled, events.RunPaused, events.RunUnpaused)
	if err != nil {
		return nil, "", err
	}
	paused := interpreter.NewPauses()
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
				gates = append(gates, Gate{StepKey: ev.StepKey, Attempt: d.Attempt, Signal: d.Wait.Signal, Deadline: d.Wait.Deadline, timeout: d.Wait.TimeoutSeconds})
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
		case events.RunPaused, events.RunUnpaused:
			paused.Observe(ev)
		}
	}
	// A deadline moves by the run's paused time; none holds while a pause
	// that began before it lasts.
	for i, g := range gates {
		if g.Deadline != nil {
			start := interpreter.WaitStart(events.WaitInfo{Deadline: g.Deadline, TimeoutSeconds: g.timeout})
			if d, ok := paused.Deadline(*g.Deadline, start); ok {
				gates[i].Deadline = &d
			} else {
				gates[i].Deadline = nil
			}
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
// run waits for instead, or what the child runs it waits for wait for,
// and where to send that.
func notWaiting(runID, signal, state string, open, inChildren []Gate) error {
	var what string
	switch {
	case events.Terminal(state):
		what = fmt.Sprintf("it has finished (%s) and waits for nothing", state)
	case len(open) == 0 && len(inChildren) > 0:
		parts := make([]string, len(inChildren))
		for i, g := range inChildren {
			parts[i] = DescribeGate(g)
		}
		what = "it waits for no signal itself, but for " + strings.Join(parts, "; ")
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
// approve, until 2026-03-01T09:00:30Z)", and for a child run's gate which
// child and where to send it: "child run C (of step deploy), which waits
// for signal approved (step approve, no deadline): orbit run signal C
// approved".
func DescribeGate(g Gate) string {
	until := "no deadline"
	if g.Deadline != nil {
		until = "until " + g.Deadline.UTC().Format(time.RFC3339)
	}
	own := fmt.Sprintf("signal %s (step %s, %s)", g.Signal, g.StepKey, until)
	if g.RunID == "" {
		return own
	}
	return fmt.Sprintf("run %s (started under step %s), which waits for %s: orbit run signal %s %s", g.RunID, g.Via, own, g.RunID, g.Signal)
}
