package chaos_test

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/internal/testkit"
	"github.com/orbitrun/orbit/routine"
)

// The routine and pause trials: the engine is killed (SIGKILL) at random
// moments and, for routines, just after it decided a tick
// (routine-after-decision), and started again, several times over.

const chaosTockJob = `schemaVersion: 2
kind: Job
metadata: {name: tock}
spec:
  max_active_runs: 20
  steps:
    - {id: say, spec: {type: deterministic, action: echo, config: {said: yes}}}
`

const chaosTockRoutine = `schemaVersion: 2
kind: Routine
metadata: {name: tock}
spec:
  trigger: {cron: "*/2 * * * * *", missed_run: catch_up_once}
  target: job:tock
`

// routineRun is what the trial reads of a routine's run.
type routineRun struct {
	ID      string              `json:"id"`
	State   string              `json:"state"`
	Routine *events.RoutineTick `json:"routine"`
}

// TestChaosRoutine: whatever the kills, every tick of a routine fires at
// most once, as the run its id derives from, and no tick is lost without
// the catch-up run that stands for it (catch_up_once: the gap before a run
// is one tick more than the ticks it says it caught up).
func TestChaosRoutine(t *testing.T) {
	if testing.Short() {
		t.Skip("the chaos suite kills real engines; skipped under -short")
	}
	cfg := configure(t)
	rng := rand.New(rand.NewPCG(cfg.seed, 7))
	t.Logf("seed %d", cfg.seed)
	r := &rig{t: t, p: testkit.NewProject(t)}
	r.p.WriteFile(".orbit/jobs/tock.yaml", chaosTockJob)
	r.p.WriteFile(".orbit/routines/tock.yaml", chaosTockRoutine)
	t.Cleanup(r.stop)
	rounds := 2
	if cfg.full {
		rounds = 6
	}
	for i := range rounds {
		failpoint := ""
		if i%2 == 1 {
			failpoint = fmt.Sprintf("routine-after-decision@%d", 1+rng.IntN(3))
		}
		if err := r.start(failpoint); err != nil {
			t.Fatal(err)
		}
		if !r.eng.diesWithin(time.Duration(1000+rng.IntN(5000)) * time.Millisecond) {
			r.eng.kill()
		}
		r.eng.forgetInfo(r.p)
		time.Sleep(time.Duration(rng.IntN(6000)) * time.Millisecond) // down across ticks, or not
	}
	if err := r.start(""); err != nil {
		t.Fatal(err)
	}
	time.Sleep(5 * time.Second)
	var runs []routineRun
	deadline := time.Now().Add(time.Minute)
	for {
		out, err := r.orbitOK("run", "history", "--job", "tock", "--limit", "0", "--json")
		if err != nil {
			t.Fatal(err)
		}
		runs = nil
		if err := json.Unmarshal([]byte(out), &runs); err != nil {
			t.Fatal(err)
		}
		if !slices.ContainsFunc(runs, func(v routineRun) bool { return !events.Terminal(v.State) }) || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	slices.SortFunc(runs, func(a, b routineRun) int { return a.Routine.Tick.Compare(b.Routine.Tick) })
	if len(runs) < 3 {
		t.Fatalf("%d routine runs", len(runs))
	}
	var problems []string
	for i, v := range runs {
		if v.ID != routine.TickRunID("tock", v.Routine.Tick) {
			problems = append(problems, fmt.Sprintf("run %s is not its tick's (%s)", v.ID, v.Routine.Tick))
		}
		if v.State != events.StateSuccess {
			problems = append(problems, fmt.Sprintf("run %s ended %s", v.ID, v.State))
		}
		if i == 0 {
			continue
		}
		gap := v.Routine.Tick.Sub(runs[i-1].Routine.Tick)
		if want := time.Duration(v.Routine.Missed+1) * 2 * time.Second; gap != want {
			problems = append(problems, fmt.Sprintf("tick %s after %s: gap %s, but it caught up %d missed ticks", v.Routine.Tick, runs[i-1].Routine.Tick, gap, v.Routine.Missed))
		}
	}
	t.Logf("%d routine runs over %d engine lives", len(runs), len(r.lives))
	if len(problems) > 0 {
		t.Fatalf("routine trial, seed %d:\n%s", cfg.seed, strings.Join(problems, "\n"))
	}
}

const chaosPauseJob = `schemaVersion: 2
kind: Job
metadata: {name: pausable}
spec:
  steps:
    - {id: s1, spec: {type: deterministic, action: sleep, config: {ms: 400}}}
    - {id: s2, spec: {type: deterministic, action: sleep, config: {ms: 400}}}
    - {id: s3, spec: {type: deterministic, action: sleep, config: {ms: 400}}}
    - {id: s4, spec: {type: deterministic, action: sleep, config: {ms: 400}}}
    - {id: s5, spec: {type: deterministic, action: echo, config: {done: yes}}}
`

// TestChaosPause: a run paused at a random moment stays paused across
// engines killed and started again (no step starts between its run.paused
// and run.unpaused in the log), and once unpaused, killed again, finishes
// every step.
func TestChaosPause(t *testing.T) {
	if testing.Short() {
		t.Skip("the chaos suite kills real engines; skipped under -short")
	}
	cfg := configure(t)
	rng := rand.New(rand.NewPCG(cfg.seed, 11))
	t.Logf("seed %d", cfg.seed)
	r := &rig{t: t, p: testkit.NewProject(t)}
	r.p.WriteFile(".orbit/jobs/pausable.yaml", chaosPauseJob)
	t.Cleanup(r.stop)
	restart := func() {
		r.eng.kill()
		r.eng.forgetInfo(r.p)
		if err := r.start(""); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.start(""); err != nil {
		t.Fatal(err)
	}
	out, err := r.orbitOK("job", "run", "pausable", "--detach")
	if err != nil {
		t.Fatal(err)
	}
	id := strings.TrimSpace(out)
	time.Sleep(time.Duration(rng.IntN(1200)) * time.Millisecond)
	if _, err := r.orbitOK("run", "pause", id); err != nil {
		t.Fatal(err)
	}
	kills := 2
	if cfg.full {
		kills = 4
	}
	for range kills {
		time.Sleep(time.Duration(200+rng.IntN(1500)) * time.Millisecond)
		restart()
		out, err := r.orbitOK("run", "show", "--json", id)
		if err != nil {
			t.Fatal(err)
		}
		var v struct {
			State  string `json:"state"`
			Paused bool   `json:"paused"`
		}
		if err := json.Unmarshal([]byte(out), &v); err != nil {
			t.Fatal(err)
		}
		if !v.Paused && !events.Terminal(v.State) {
			t.Fatalf("run %s is no longer paused after a restart (seed %d)", id, cfg.seed)
		}
	}
	if _, err := r.orbitOK("run", "unpause", id); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Duration(rng.IntN(1000)) * time.Millisecond)
	restart()
	deadline := time.Now().Add(time.Minute)
	var v *runView
	for {
		if v, err = r.run(id); err != nil {
			t.Fatal(err)
		}
		if events.Terminal(v.State) || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if v.State != events.StateSuccess {
		t.Fatalf("run %s ended %s (seed %d)", id, v.State, cfg.seed)
	}
	evs, err := r.events(id)
	if err != nil {
		t.Fatal(err)
	}
	paused := false
	for _, ev := range evs {
		switch ev.Type {
		case events.RunPaused:
			paused = true
		case events.RunUnpaused:
			paused = false
		case events.StepStarted:
			if paused {
				t.Errorf("step %s started while the run was paused (seq %d, seed %d)", ev.StepKey, ev.Seq, cfg.seed)
			}
		}
	}
}
