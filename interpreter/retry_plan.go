package interpreter

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/orbitrun/orbit/assets"
	"github.com/orbitrun/orbit/events"
)

// PlanRetry decides what a retry with From does with each top-level step
// before From (DESIGN §12): a retry never carries a decision across a
// change of the input it rested on.
//
// With the old run's input, every step is reused: nothing it rested on
// changed. With another input:
//   - a wait gate is re-armed: a signal approves a run with its input, so
//     the gate waits for its signal again;
//   - a step that was skipped, a structural step (parallel, fan_out, loop)
//     and a step that holds a gate run again: their decisions, or the
//     inputs of the steps inside them, rest on the input and are made as
//     they run;
//   - an activity step is reused only if its when still holds and its
//     input rendered now (the new input, the outputs of the steps reused
//     before it) equals the rendered input the old run recorded for it;
//     a step that uses the result of a step that runs again runs again.
//
// IMPORTANT: the plan depends only on the job, the two inputs and the old
// run's history, which no longer changes (the run is finished): asked
// twice, it answers the same. It is recorded in the new run's
// run.requested, and the interpreter reuses exactly the steps it says.
func PlanRetry(ctx context.Context, read ReadRunFunc, old *events.RunRequestedData, oldID string, before []assets.Step, input any, env func(string) (string, bool), root string) ([]events.RetryStep, error) {
	plan := make([]events.RetryStep, 0, len(before))
	if sameJSON(old.Input, input) {
		for _, st := range before {
			plan = append(plan, events.RetryStep{Step: st.ID, Action: events.RetryReused, Reason: "the input is unchanged"})
		}
		return plan, nil
	}
	evs, err := read(ctx, oldID, OutcomeTypes...)
	if err != nil {
		return nil, err
	}
	outcomes, err := topLevelOutcomes(evs, before)
	if err != nil {
		return nil, err
	}
	inputs := recordedInputs{read: read}
	if env == nil {
		env = func(string) (string, bool) { return "", false }
	}
	pinned := withSecretPlaceholders(func(name string) (string, bool) {
		if v, ok := old.Env[name]; ok {
			return v, true
		}
		return env(name)
	})
	sc := newScope(input, root, "")
	// again names what the steps that do not reuse their outcome make
	// visible (their ids, branches, loop bodies, collect names), by the
	// top-level step they belong to.
	again := map[string]string{}
	for i := range before {
		st := &before[i]
		r := outcomes[st.ID]
		step := events.RetryStep{Step: st.ID, Action: events.RetryRerun}
		switch {
		case st.Wait != nil:
			step.Action = events.RetryRearmed
			step.Reason = fmt.Sprintf("the input changed, and a signal approves a run with its input: the gate waits for signal %s again", st.Wait.Signal)
		case r.skipped:
			step.Reason = "its when was false on the old input; it is evaluated again on the new one"
		case holdsGate(st) != "":
			step.Reason = fmt.Sprintf("it holds the wait gate %s, which the new input re-arms", holdsGate(st))
		case st.Parallel != nil || st.FanOut != nil || st.Loop != nil:
			step.Reason = fmt.Sprintf("the input changed, and the inputs of the steps inside a %s step are rendered as it runs", structuralKind(st))
		default:
			step.Action, step.Reason, err = reuseActivity(ctx, sc, st, again, pinned, &inputs, oldID, r)
			if err != nil {
				return nil, err
			}
		}
		if step.Action == events.RetryReused {
			sc.record(st.ID, assets.StepResult{State: events.StateSuccess, Output: r.output})
			for id, res := range r.exposed {
				sc.record(id, res)
			}
		} else {
			for _, id := range visibleNames(st) {
				again[id] = st.ID
			}
		}
		plan = append(plan, step)
	}
	return plan, nil
}

// reuseActivity decides whether an activity step (a job.invoke one
// included) that succeeded in the old run is reused with the new input:
// its when must hold, it must use no result of a step that runs again,
// and its input rendered in sc must equal the one the old run recorded.
func reuseActivity(ctx context.Context, sc *scope, st *assets.Step, again map[string]string, env func(string) (string, bool), inputs *recordedInputs, oldID string, r reused) (string, string, error) {
	for _, id := range stepRefs(st) {
		if owner, ok := again[id]; ok {
			if owner == id {
				return events.RetryRerun, fmt.Sprintf("it uses steps.%s, which runs again", id), nil
			}
			return events.RetryRerun, fmt.Sprintf("it uses steps.%s, which step %s runs again", id, owner), nil
		}
	}
	if st.When != "" {
		cond, err := assets.ParseCondition(st.When)
		if err != nil {
			return events.RetryRerun, "when: " + err.Error(), nil
		}
		ok, err := cond.Eval(sc.templates(sc.input, env))
		switch {
		case err != nil:
			return events.RetryRerun, "its when cannot be evaluated on the new input: " + err.Error(), nil
		case !ok:
			return events.RetryRerun, "its when is false on the new input", nil
		}
	}
	now, err := renderStep(sc, st, env, nil, false)
	if err != nil {
		return events.RetryRerun, "its input cannot be rendered on the new input: " + err.Error(), nil
	}
	was, ok, err := inputs.get(ctx, oldID, st.ID, r.attempt)
	if err != nil {
		return "", "", err
	}
	if !ok {
		return events.RetryRerun, fmt.Sprintf("run %s recorded no rendered input for it to compare", oldID), nil
	}
	if changed := changedKeys(was, now.carried); len(changed) > 0 {
		return events.RetryRerun, "its rendered input changed (" + strings.Join(changed, ", ") + ")", nil
	}
	return events.RetryReused, "its rendered input is unchanged", nil
}

// holdsGate returns the key path of a wait step inside a structural step,
// "" when it holds none.
func holdsGate(st *assets.Step) string {
	var inner []assets.Step
	switch {
	case st.Parallel != nil:
		inner = st.Parallel.Branches
	case st.Loop != nil:
		inner = st.Loop.Steps
	case st.FanOut != nil:
		inner = []assets.Step{st.FanOut.Worker}
	}
	for i := range inner {
		if inner[i].Wait != nil {
			return inner[i].ID
		}
		if in := holdsGate(&inner[i]); in != "" {
			return inner[i].ID + "/" + in
		}
	}
	return ""
}

func structuralKind(st *assets.Step) string {
	switch {
	case st.Parallel != nil:
		return events.TypeParallel
	case st.FanOut != nil:
		return events.TypeFanOut
	}
	return events.TypeLoop
}

// visibleNames are the names under which a top-level step's results are
// visible to the steps after it: its id, and a parallel step's branches,
// a loop's body steps, a fan_in's collect name.
func visibleNames(st *assets.Step) []string {
	names := []string{st.ID}
	switch {
	case st.Parallel != nil:
		for _, br := range st.Parallel.Branches {
			names = append(names, br.ID)
		}
	case st.Loop != nil:
		for _, body := range st.Loop.Steps {
			names = append(names, body.ID)
		}
	case st.FanOut != nil && st.FanIn != nil && st.FanIn.Collect != "":
		names = append(names, st.FanIn.Collect)
	}
	return names
}

// stepRef finds the steps a template reads: {{ steps.ID… }}.
var stepRef = regexp.MustCompile(`\{\{[^}]*?\bsteps\.([A-Za-z_][A-Za-z0-9_-]*)`)

// stepRefs returns the ids of the steps the step's templates read, sorted.
// It reads the step as encoded, as PinEnv reads a job's env references, so
// it can only name too many (a reference quoted as literal text), which
// costs a reuse, never too few.
func stepRefs(st *assets.Step) []string {
	data, err := json.Marshal(st)
	if err != nil {
		return nil
	}
	var ids []string
	for _, m := range stepRef.FindAllSubmatch(data, -1) {
		ids = append(ids, string(m[1]))
	}
	slices.Sort(ids)
	return slices.Compact(ids)
}

// recordedInputs finds the rendered input a run recorded for a top-level
// step's attempt, following reused_from to the run that ran it when the
// run reused it.
type recordedInputs struct {
	read ReadRunFunc
	// runs caches each run's step.started and step.finished by key and
	// attempt.
	runs map[string]*runSteps
}

// runSteps are a run's step.started and step.finished of top-level
// steps, by step key and attempt.
type runSteps struct {
	started  map[string]map[int]events.StepStartedData
	finished map[string]map[int]events.StepFinishedData
}

// start records the start of an attempt of the step key: its
// step.started's data, or what a decided step's step.finished carries.
func (rs *runSteps) start(key string, d events.StepStartedData) {
	if rs.started[key] == nil {
		rs.started[key] = map[int]events.StepStartedData{}
	}
	rs.started[key][d.Attempt] = d
}

// maxReuseChain bounds how many runs get follows a reused step back.
const maxReuseChain = 64

func (ri *recordedInputs) get(ctx context.Context, runID, key string, attempt int) (any, bool, error) {
	attempt = max(attempt, 1)
	for range maxReuseChain {
		rs, err := ri.load(ctx, runID)
		if err != nil {
			return nil, false, err
		}
		if d, ok := rs.started[key][attempt]; ok {
			return d.Input, true, nil
		}
		fin, ok := rs.finished[key][attempt]
		if !ok || fin.ReusedFrom == "" {
			return nil, false, nil
		}
		// The run reused the step: its input is in the run it came from,
		// at the attempt that succeeded there.
		runID = fin.ReusedFrom
		if rs, err = ri.load(ctx, runID); err != nil {
			return nil, false, err
		}
		if attempt = rs.succeeded(key); attempt == 0 {
			return nil, false, nil
		}
	}
	return nil, false, nil
}

// succeeded is the last attempt of key that succeeded, 0 if none did.
func (rs *runSteps) succeeded(key string) int {
	best := 0
	for n, d := range rs.finished[key] {
		if d.State == events.StateSuccess && n > best {
			best = n
		}
	}
	return best
}

func (ri *recordedInputs) load(ctx context.Context, runID string) (*runSteps, error) {
	if rs, ok := ri.runs[runID]; ok {
		return rs, nil
	}
	evs, err := ri.read(ctx, runID, events.StepStarted, events.StepFinished)
	if err != nil {
		return nil, err
	}
	rs := &runSteps{started: map[string]map[int]events.StepStartedData{}, finished: map[string]map[int]events.StepFinishedData{}}
	for _, ev := range evs {
		if strings.Contains(ev.StepKey, "/") {
			continue // only top-level steps are reused
		}
		switch ev.Type {
		case events.StepStarted:
			var d events.StepStartedData
			if err := ev.Decode(&d); err != nil {
				return nil, err
			}
			rs.start(ev.StepKey, d)
		case events.StepFinished:
			var d events.StepFinishedData
			if err := ev.Decode(&d); err != nil {
				return nil, err
			}
			if d.Started != nil {
				rs.start(ev.StepKey, *d.Started)
			}
			if rs.finished[ev.StepKey] == nil {
				rs.finished[ev.StepKey] = map[int]events.StepFinishedData{}
			}
			rs.finished[ev.StepKey][d.Attempt] = d
		}
	}
	if ri.runs == nil {
		ri.runs = map[string]*runSteps{}
	}
	ri.runs[runID] = rs
	return rs, nil
}

// canonical encodes a JSON value with its object keys sorted, whatever
// form it came in (decoded, or encoded as json.RawMessage).
func canonical(v any) []byte {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	var back any
	if err := json.Unmarshal(raw, &back); err != nil {
		return nil
	}
	out, err := json.Marshal(back)
	if err != nil {
		return nil
	}
	return out
}

// sameJSON reports whether a and b are the same JSON value.
func sameJSON(a, b any) bool {
	ca, cb := canonical(a), canonical(b)
	return ca != nil && cb != nil && bytes.Equal(ca, cb)
}

// changedKeys names what differs between two rendered inputs: the
// top-level keys whose values differ when both are objects, sorted, else
// "the whole input"; nothing when they are the same.
func changedKeys(was, now any) []string {
	if sameJSON(was, now) {
		return nil
	}
	var a, b map[string]any
	if json.Unmarshal(canonical(was), &a) != nil || json.Unmarshal(canonical(now), &b) != nil || a == nil || b == nil {
		return []string{"the whole input"}
	}
	var keys []string
	for k, v := range a {
		if w, ok := b[k]; !ok || !sameJSON(v, w) {
			keys = append(keys, k)
		}
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	return keys
}
