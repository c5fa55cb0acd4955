package chaos_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/orbitrun/orbit/events"
)

// The checks of a finished run. Each returns nil when its promise held,
// else an error that carries the evidence.

// checkSuccess: the run finished, successfully.
func checkSuccess(v *runView) error {
	if v.State == events.StateSuccess {
		return nil
	}
	if v.Error != nil {
		return fmt.Errorf("the run ended %s: %s (%s, step %s)", v.State, v.Error.Message, v.Error.Kind, v.Error.StepKey)
	}
	return fmt.Errorf("the run ended %s", v.State)
}

// checkOutput: the run's output is the uninterrupted run's. want is empty
// for the reference trial itself.
func checkOutput(got, want string) error {
	if want == "" || got == want {
		return nil
	}
	return fmt.Errorf("the output differs from the uninterrupted run's\n got: %s\nwant: %s", got, want)
}

// canonical is v as JSON with sorted keys, so that equal outputs compare
// equal as strings.
func canonical(v any) string {
	data, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("unencodable output: %v", err)
	}
	return string(data)
}

// readEffects returns the lines the job's shell steps appended to the
// effects file, one per execution: "<step key>#<attempt>".
func readEffects(path string) ([]string, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return strings.Fields(string(data)), nil
}

// record is what the log says about one attempt of a shell step.
type record struct {
	starts      int  // activity.started events
	redelivered bool // one of them says redelivered
	deliveries  []string
}

// String lists the record's activity.started events: the engine that ran
// the attempt and whether it said redelivered.
func (r *record) String() string {
	return fmt.Sprintf("%d activity.started on record [%s]", r.starts, strings.Join(r.deliveries, "; "))
}

// instance names a step attempt as the effects file does.
func instance(key string, attempt int) string { return key + "#" + strconv.Itoa(attempt) }

// checkEffects: a step that finished never ran again, unless it was
// redelivered — its worker died inside it — and then every execution is on
// record. Each shell step attempt that finished once in the log has its
// effect exactly once, or, with a redelivery on record (redelivered: true
// or more than one activity.started), at most once per activity.started.
// Nothing ran that the log does not know of.
//
// From step protocol 5 on an embedded store (shared false) a command's
// first execution has no activity.started, so an attempt may have run
// once more than its starts: the first, whose record is its step.started
// and, if it got that far, its step.finished.
func checkEffects(evs []events.Event, lines []string, shared bool) error {
	unrecorded := 0
	shell := map[string]*record{}
	get := func(id string) *record {
		if shell[id] == nil {
			shell[id] = &record{}
		}
		return shell[id]
	}
	finished := map[string]int{}
	var started []events.Event
	for _, ev := range evs {
		switch ev.Type {
		case events.RunRequested:
			var d events.RunRequestedData
			if err := ev.Decode(&d); err != nil {
				return fmt.Errorf("decoding %s %s: %w", ev.Type, ev.ID, err)
			}
			if d.Protocol >= 5 && !shared {
				unrecorded = 1
			}
		case events.StepStarted:
			var d events.StepStartedData
			if err := ev.Decode(&d); err != nil {
				return fmt.Errorf("decoding %s %s: %w", ev.Type, ev.ID, err)
			}
			if d.ActivityType == "shell" {
				get(instance(ev.StepKey, d.Attempt))
			}
		case events.StepFinished:
			var d events.StepFinishedData
			if err := ev.Decode(&d); err != nil {
				return fmt.Errorf("decoding %s %s: %w", ev.Type, ev.ID, err)
			}
			finished[instance(ev.StepKey, d.Attempt)]++
		case events.ActivityStarted:
			started = append(started, ev)
		}
	}
	for _, ev := range started {
		var d events.ActivityStartedData
		if err := ev.Decode(&d); err != nil {
			return fmt.Errorf("decoding %s %s: %w", ev.Type, ev.ID, err)
		}
		if rec, ok := shell[instance(ev.StepKey, d.Attempt)]; ok {
			rec.starts++
			rec.redelivered = rec.redelivered || d.Redelivered
			rec.deliveries = append(rec.deliveries, fmt.Sprintf("seq %d engine %s delivery %d redelivered %t", ev.Seq, d.Worker, d.Delivery, d.Redelivered))
		}
	}
	ran := map[string]int{}
	for _, l := range lines {
		ran[l]++
	}

	var problems []string
	for _, id := range sortedKeys(shell) {
		rec, n := shell[id], ran[id]
		switch {
		case finished[id] != 1:
			problems = append(problems, fmt.Sprintf("%s: step.finished %d times in the log (ran %d times)", id, finished[id], n))
		case n == 0:
			problems = append(problems, fmt.Sprintf("%s: finished in the log, but never ran", id))
		case n > rec.starts+unrecorded:
			problems = append(problems, fmt.Sprintf("%s: ran %d times, %s", id, n, rec))
		case n > 1 && !rec.redelivered && rec.starts < 2:
			problems = append(problems, fmt.Sprintf("%s: ran %d times, no redelivery on record: %s", id, n, rec))
		}
	}
	for _, id := range sortedKeys(ran) {
		if shell[id] == nil {
			problems = append(problems, fmt.Sprintf("%s: ran %d times, but the log never dispatched it", id, ran[id]))
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("%s\neffects file: %s", strings.Join(problems, "\n"), strings.Join(lines, " "))
	}
	return nil
}

// checkStepEvents: a run of step protocol 3 or later has the events that
// protocol writes whatever crashes it went through: no activity.finished,
// and the step.finished of every attempt a worker started names a worker
// (it carries the execution's outcome).
func checkStepEvents(evs []events.Event) error {
	var problems []string
	started := map[string]bool{}
	for _, ev := range evs {
		switch ev.Type {
		case events.RunRequested:
			var d events.RunRequestedData
			if err := ev.Decode(&d); err != nil {
				return fmt.Errorf("decoding %s %s: %w", ev.Type, ev.ID, err)
			}
			if d.Protocol < 3 {
				return nil
			}
		case events.ActivityFinished:
			problems = append(problems, fmt.Sprintf("seq %d: an activity.finished of step %s", ev.Seq, ev.StepKey))
		case events.ActivityStarted:
			var d events.ActivityStartedData
			if err := ev.Decode(&d); err != nil {
				return fmt.Errorf("decoding %s %s: %w", ev.Type, ev.ID, err)
			}
			started[instance(ev.StepKey, d.Attempt)] = true
		case events.StepFinished:
			var d events.StepFinishedData
			if err := ev.Decode(&d); err != nil {
				return fmt.Errorf("decoding %s %s: %w", ev.Type, ev.ID, err)
			}
			if id := instance(ev.StepKey, d.Attempt); started[id] && d.Worker == "" && (d.Error == nil || d.Error.Kind != events.KindDeadLetter) {
				problems = append(problems, fmt.Sprintf("seq %d: %s was started by a worker, its step.finished names none", ev.Seq, id))
			}
		}
	}
	if len(problems) > 0 {
		return errors.New(strings.Join(problems, "\n"))
	}
	return nil
}

// checkReplay: the views equal a replay of the log.
func checkReplay(r *rig) error {
	res, err := r.orbit("replay", "--verify")
	if err != nil {
		return err
	}
	if res.Code != 0 {
		return fmt.Errorf("orbit replay --verify: %s", res)
	}
	return nil
}

// checkGroundhog: the task's audit holds, and the repository is on its
// task branch, clean, with one squash commit per checkpoint of the plan
// (on the held ref, for a job that holds its commits).
func checkGroundhog(r *rig) error {
	var problems []string
	if res, err := r.orbit("groundhog", "verify", r.task); err != nil {
		problems = append(problems, err.Error())
	} else if res.Code != 0 {
		problems = append(problems, fmt.Sprintf("orbit groundhog verify %s: %s", r.task, res))
	}
	if branch, err := r.git("branch", "--show-current"); err != nil {
		problems = append(problems, err.Error())
	} else if branch != "main" {
		problems = append(problems, fmt.Sprintf("the repository is on %q, not main", branch))
	}
	if status, err := r.git("status", "--porcelain", "--untracked-files=no"); err != nil {
		problems = append(problems, err.Error())
	} else if status != "" {
		problems = append(problems, "uncommitted changes to tracked files:\n"+status)
	}
	// Newest first: one commit per checkpoint, in plan order, on the
	// repository's initial commit.
	ref := "main"
	if r.job.held {
		// Held for approval: main is the initial commit alone, the held
		// ref has the commits.
		ref = "refs/orbit/groundhog/" + r.task
		if n, err := r.git("rev-list", "--count", "main"); err != nil {
			problems = append(problems, err.Error())
		} else if n != "1" {
			problems = append(problems, fmt.Sprintf("main moved: %s commits, the task's commits are held for approval", n))
		}
	}
	log, err := r.git("log", "--format=%(trailers:key=Groundhog-Checkpoint,valueonly,separator=%x2C)|%s", ref)
	if err != nil {
		problems = append(problems, err.Error())
	} else {
		var got []string
		for _, l := range strings.Split(log, "\n") {
			cp, _, _ := strings.Cut(l, "|")
			got = append(got, strings.TrimSpace(cp))
		}
		want := []string{""} // the initial commit
		for _, cp := range groundhogCheckpoints {
			want = append([]string{cp}, want...)
		}
		if !slices.Equal(got, want) {
			problems = append(problems, fmt.Sprintf("git log %s has commits for checkpoints %q, want %q:\n%s", ref, got, want, log))
		}
	}
	if len(problems) > 0 {
		return errors.New(strings.Join(problems, "\n"))
	}
	return nil
}

// distinct returns the set of lines.
func distinct(lines []string) map[string]bool {
	set := map[string]bool{}
	for _, l := range lines {
		set[l] = true
	}
	return set
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
