package main_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/internal/testkit"
	"github.com/orbitrun/orbit/routine"
)

const tockJob = `
schemaVersion: 2
kind: Job
metadata: {name: tock}
spec:
  max_active_runs: 10
  steps:
    - {id: say, spec: {type: deterministic, action: echo}}
`

const slowTockJob = `
schemaVersion: 2
kind: Job
metadata: {name: slowtock}
spec:
  max_active_runs: 10
  steps:
    - {id: nap, spec: {type: deterministic, action: sleep, config: {ms: 5000}}}
`

// routineYAML is a routine every two seconds (the cron's seconds field).
func routineYAML(name, job, missed, overlap string) string {
	return routineEvery("*/2 * * * * *", name, job, missed, overlap)
}

// routineEvery is a routine on the given cron.
func routineEvery(cron, name, job, missed, overlap string) string {
	return fmt.Sprintf(`schemaVersion: 2
kind: Routine
metadata: {name: %s}
spec:
  trigger: {cron: "%s", missed_run: %s}
  target: job:%s
  input: {from: %s}
  policy: {overlap: %s}
`, name, cron, missed, job, name, overlap)
}

// logEvents reads from the cluster's log, in its order, every event of the
// given types.
func logEvents(t *testing.T, c *testkit.Cluster, types ...string) []events.Event {
	t.Helper()
	ctx := testkit.Context(t)
	js, err := jetstream.New(c.Connect())
	require.NoError(t, err)
	stream, err := js.Stream(ctx, events.EventsStream)
	require.NoError(t, err)
	var filters []string
	var last uint64
	for _, typ := range types {
		f := events.TypeFilter(events.AggregateRun, typ)
		filters = append(filters, f)
		if msg, err := stream.GetLastMsgForSubject(ctx, f); err == nil {
			last = max(last, msg.Sequence)
		}
	}
	if last == 0 {
		return nil
	}
	cons, err := js.OrderedConsumer(ctx, events.EventsStream, jetstream.OrderedConsumerConfig{FilterSubjects: filters})
	require.NoError(t, err)
	var out []events.Event
	deadline := time.Now().Add(time.Minute)
	for {
		msg, err := cons.Next(jetstream.FetchMaxWait(10 * time.Second))
		if err != nil {
			// The cluster answers no request for a moment now and then
			// under load: the ordered consumer is asked again.
			require.True(t, time.Now().Before(deadline), "reading the log up to %d: %v", last, err)
			continue
		}
		meta, err := msg.Metadata()
		require.NoError(t, err)
		var ev events.Event
		require.NoError(t, json.Unmarshal(msg.Data(), &ev))
		out = append(out, ev)
		if meta.Sequence.Stream >= last {
			return out
		}
	}
}

// fired is a routine run as its run.requested has it.
type fired struct {
	run  string
	tick events.RoutineTick
}

// routineRuns returns, by routine, the runs the log's run.requested say
// the routines fired, in the log's order, and checks that each run's id
// is its tick's and that no tick fired twice.
func routineRuns(t *testing.T, evs []events.Event) map[string][]fired {
	t.Helper()
	out := map[string][]fired{}
	seen := map[string]bool{}
	for _, ev := range evs {
		if ev.Type != events.RunRequested {
			continue
		}
		var d events.RunRequestedData
		require.NoError(t, ev.Decode(&d))
		if d.Routine == nil {
			continue
		}
		key := d.Routine.Name + " " + d.Routine.Tick.String()
		assert.False(t, seen[key], "tick fired twice: %s", key)
		seen[key] = true
		assert.Equal(t, routine.TickRunID(d.Routine.Name, d.Routine.Tick), ev.RunID)
		out[d.Routine.Name] = append(out[d.Routine.Name], fired{run: ev.RunID, tick: *d.Routine})
	}
	return out
}

func skips(t *testing.T, evs []events.Event) map[string][]events.RoutineSkippedData {
	t.Helper()
	out := map[string][]events.RoutineSkippedData{}
	for _, ev := range evs {
		if ev.Type != events.RoutineSkipped {
			continue
		}
		var d events.RoutineSkippedData
		require.NoError(t, ev.Decode(&d))
		out[d.Routine] = append(out[d.Routine], d)
	}
	return out
}

// TestRoutinesOnTwoEnginesOfTheCluster: routines every two seconds on two
// engines of the three-node harness fire one run per tick (checked from
// the log: no tick twice, none left out while an engine ran); with both
// engines killed across three ticks and one started again, catch_up_once
// fires one catch-up run and skip none (recording the missed ticks once);
// overlap: forbid with runs longer than the period records the ticks it
// skipped and never has two runs live.
func TestRoutinesOnTwoEnginesOfTheCluster(t *testing.T) {
	t.Parallel()
	routinesOnTwoEngines(t, routineSchedule{cron: "*/2 * * * * *", period: 2 * time.Second, run: 14 * time.Second})
}

// TestSoakRoutinesEveryMinuteOnTwoEngines is the same over real time:
// routines every minute for ten minutes on two engines of the harness,
// then both engines down across three ticks and one back (make soak).
func TestSoakRoutinesEveryMinuteOnTwoEngines(t *testing.T) {
	if os.Getenv("ORBIT_SOAK") == "" {
		t.Skip("a quarter of an hour of routines every minute: make soak runs it (ORBIT_SOAK=1)")
	}
	t.Parallel()
	routinesOnTwoEngines(t, routineSchedule{cron: "0 * * * * *", period: time.Minute, run: 10 * time.Minute})
}

// routineSchedule is how often the routines of routinesOnTwoEngines fire
// (cron, and its period) and how long both engines run before they are
// killed; they stay down for three periods and a half.
type routineSchedule struct {
	cron   string
	period time.Duration
	run    time.Duration
}

func routinesOnTwoEngines(t *testing.T, sched routineSchedule) {
	c := testkit.StartCluster(t, filepath.Join(t.TempDir(), "creds"))
	ps := clusterProjects(t, c, 2, "tock", tockJob)
	for _, p := range ps {
		p.WriteFile(".orbit/jobs/slowtock.yaml", strings.Replace(slowTockJob, "ms: 5000", fmt.Sprintf("ms: %d", (sched.period*5/2).Milliseconds()), 1))
		p.WriteFile(".orbit/routines/catch.yaml", routineEvery(sched.cron, "catch", "tock", routine.CatchUpOnce, routine.Allow))
		p.WriteFile(".orbit/routines/skip.yaml", routineEvery(sched.cron, "skip", "tock", routine.Skip, routine.Allow))
		p.WriteFile(".orbit/routines/forbid.yaml", routineEvery(sched.cron, "forbid", "slowtock", routine.Skip, routine.Forbid))
	}
	es := testkit.StartEngines(t, ps)
	up := time.Now()
	time.Sleep(sched.run)
	for _, e := range es {
		e.Kill()
	}
	killed := time.Now()
	time.Sleep(sched.period * 7 / 2) // three ticks or more with no engine
	restarted := time.Now()
	es = []*testkit.Engine{testkit.StartEngine(t, ps[0])}
	time.Sleep(3 * sched.period)
	es[0].Stop()

	evs := logEvents(t, c, events.RunRequested, events.RunFinished, events.RoutineSkipped)
	runs := routineRuns(t, evs)
	skipped := skips(t, evs)

	// Every tick while both engines ran (a few seconds' grace at either
	// end, for the engines' start and kill) fired one run.
	grace := min(sched.period, 5*time.Second)
	var want []time.Time
	for tick := up.Add(grace).Truncate(sched.period).UTC(); !tick.After(killed.Add(-grace)); tick = tick.Add(sched.period) {
		if !tick.Before(up.Add(grace)) {
			want = append(want, tick)
		}
	}
	require.GreaterOrEqual(t, len(want), int(sched.run/sched.period)-2)
	for _, name := range []string{"catch", "skip"} {
		var before, got []time.Time
		for _, f := range runs[name] {
			if f.tick.Tick.Before(killed) {
				before = append(before, f.tick.Tick)
			}
			if !f.tick.Tick.Before(want[0]) && !f.tick.Tick.After(want[len(want)-1]) {
				got = append(got, f.tick.Tick)
			}
		}
		assert.Equal(t, want, got, "%s: one run per tick while the engines ran", name)
		for i := 1; i < len(before); i++ {
			assert.Equal(t, sched.period, before[i].Sub(before[i-1]), "%s: one run per tick, none left out: %v", name, before)
		}
		t.Logf("%s: %d runs while the engines ran, ticks %s to %s, one each", name, len(before), before[0].Format(time.TimeOnly), before[len(before)-1].Format(time.TimeOnly))
	}

	var catchUps []fired
	for _, f := range runs["catch"] {
		if f.tick.Missed > 0 {
			catchUps = append(catchUps, f)
		}
	}
	require.Len(t, catchUps, 1, "one catch-up run: %v", runs["catch"])
	assert.GreaterOrEqual(t, catchUps[0].tick.Missed, 2, "three ticks or more passed with no engine")
	t.Logf("engines killed at %s, one back at %s: catch fired one catch-up run for tick %s (%d missed before it)",
		killed.Format(time.TimeOnly), restarted.Format(time.TimeOnly), catchUps[0].tick.Tick.Format(time.TimeOnly), catchUps[0].tick.Missed)
	assert.True(t, catchUps[0].tick.Tick.After(killed) && catchUps[0].tick.Tick.Before(restarted.Add(sched.period)))

	for _, f := range runs["skip"] {
		assert.False(t, f.tick.Tick.After(killed.Add(sched.period/2)) && f.tick.Tick.Before(restarted), "skip fired no missed tick: %v", f)
		assert.Zero(t, f.tick.Missed)
	}
	var missed []events.RoutineSkippedData
	for _, s := range skipped["skip"] {
		if s.Reason == events.SkipMissed {
			missed = append(missed, s)
		}
	}
	require.Len(t, missed, 1, "the missed ticks are recorded once: %v", skipped["skip"])
	assert.GreaterOrEqual(t, missed[0].Ticks, 3)
	t.Logf("skip fired no missed tick and recorded %d missed ticks once (tick %s)", missed[0].Ticks, missed[0].Tick.Format(time.TimeOnly))

	require.NotEmpty(t, skipped["forbid"], "a run of two periods and a half skips ticks")
	forbidRuns := map[string]bool{}
	for _, f := range runs["forbid"] {
		forbidRuns[f.run] = true
	}
	for _, s := range skipped["forbid"] {
		if s.Reason == events.SkipOverlap {
			assert.True(t, forbidRuns[s.Running], "the skip names the run that still ran: %v", s)
		}
	}
	live := ""
	for _, ev := range evs {
		if !forbidRuns[ev.RunID] {
			continue
		}
		switch ev.Type {
		case events.RunRequested:
			assert.Empty(t, live, "run %s requested while %s was live", ev.RunID, live)
			live = ev.RunID
		case events.RunFinished:
			if ev.RunID == live {
				live = ""
			}
		}
	}
	t.Logf("forbid (runs of %s, every %s): %d runs, %d ticks skipped, never two live", sched.period*5/2, sched.period, len(runs["forbid"]), len(skipped["forbid"]))
}

// TestARoutineTickDecidedByAKilledEngineFires: an engine killed with
// SIGKILL just after it decided a tick leaves the decision in the
// routine's key; the next engine fires that tick's run, once.
func TestARoutineTickDecidedByAKilledEngineFires(t *testing.T) {
	t.Parallel()
	p := testkit.NewProject(t)
	p.WriteFile(".orbit/jobs/tock.yaml", tockJob)
	p.WriteFile(".orbit/routines/tock.yaml", routineYAML("tock", "tock", routine.Skip, routine.Allow))
	serveToFailpoint(t, p, "routine-after-decision")()
	died := time.Now()

	serve(t, p)
	var runs []runSummary
	waitFor(t, "a routine run", func() bool {
		runs = routineHistory(t, p)
		return len(runs) > 0 && runs[len(runs)-1].State == events.StateSuccess
	})
	firstRun := runs[len(runs)-1] // history is newest first
	assert.Equal(t, routine.TickRunID("tock", firstRun.Routine.Tick), firstRun.ID)
	assert.True(t, firstRun.Routine.Tick.Before(died), "the tick the killed engine decided: %s", firstRun.Routine.Tick)
	assert.True(t, firstRun.RequestedAt.After(died), "fired by the next engine")

	r := p.Orbit("routine", "show", "tock")
	require.Equal(t, 0, r.Code, r.String())
	assert.Contains(t, r.Stdout, "Cron:      */2 * * * * * (missed_run: skip)")
	r = p.Orbit("routine", "list")
	require.Equal(t, 0, r.Code, r.String())
	assert.Contains(t, r.Stdout, "tock")
	assert.Contains(t, r.Stdout, "job:tock")
}

// TestARoutineTickDecidedByAKilledEngineOfTheClusterFires: two engines of
// the three-node harness schedule a routine every two seconds; one of them
// dies by SIGKILL just after it decided a tick (failpoint
// routine-after-decision). The other fires that tick's run, once, and the
// log holds one run for every tick, none left out across the kill.
func TestARoutineTickDecidedByAKilledEngineOfTheClusterFires(t *testing.T) {
	t.Parallel()
	c := testkit.StartCluster(t, filepath.Join(t.TempDir(), "creds"))
	ps := clusterProjects(t, c, 2, "tock", tockJob)
	for _, p := range ps {
		p.WriteFile(".orbit/routines/tock.yaml", routineYAML("tock", "tock", routine.Skip, routine.Allow))
	}
	survivor := testkit.StartEngine(t, ps[1])
	ps[0].Env = append(ps[0].Env, "ORBIT_FAILPOINT=routine-after-decision")
	doomed := ps[0].Command("serve")
	require.NoError(t, doomed.Start())
	exited := make(chan error, 1)
	go func() { exited <- doomed.Wait() }()
	t.Cleanup(func() { _ = doomed.Process.Kill() })
	select {
	case err := <-exited:
		require.Error(t, err)
	case <-time.After(90 * time.Second):
		t.Fatal("the engine with the failpoint decided no tick in 90 s")
	}
	assert.Equal(t, syscall.SIGKILL, doomed.ProcessState.Sys().(syscall.WaitStatus).Signal(), "the engine died at the failpoint")
	died := time.Now()
	time.Sleep(6 * time.Second)
	survivor.Stop()

	evs := logEvents(t, c, events.RunRequested)
	runs := routineRuns(t, evs)["tock"]
	require.NotEmpty(t, runs)
	late := 0
	for i, f := range runs {
		if i > 0 {
			assert.Equal(t, 2*time.Second, f.tick.Tick.Sub(runs[i-1].tick.Tick), "one run per tick, none left out: %v", runs)
		}
		assert.Zero(t, f.tick.Missed)
	}
	for _, ev := range evs {
		var d events.RunRequestedData
		require.NoError(t, ev.Decode(&d))
		if d.Routine != nil && d.Routine.Tick.Before(died) && ev.Time.After(died) {
			late++
		}
	}
	assert.Equal(t, 1, late, "the tick the killed engine decided is fired by the other, once")
	assert.True(t, runs[len(runs)-1].tick.Tick.After(died.Add(2*time.Second)), "the other engine went on firing")
	t.Logf("%d ticks, one run each; the killed engine's tick fired by the other", len(runs))
}

// runSummary is what routineHistory reads of a run.
type runSummary struct {
	ID          string              `json:"id"`
	State       string              `json:"state"`
	Routine     *events.RoutineTick `json:"routine"`
	RequestedAt time.Time           `json:"requested_at"`
}

func routineHistory(t *testing.T, p *testkit.Project) []runSummary {
	t.Helper()
	runs := orbitJSON[[]runSummary](t, p, "run", "history", "--job", "tock", "--limit", "0", "--json")
	return slices.DeleteFunc(runs, func(s runSummary) bool { return s.Routine == nil || strings.TrimSpace(s.ID) == "" })
}

// TestABackgroundEngineStaysUpWhileARoutineIsActive: the engine a command
// started, with a one-second idle timeout, does not stop while the project
// has a routine that is not paused, and its routine keeps firing; once the
// routine is paused the engine stops when idle.
func TestABackgroundEngineStaysUpWhileARoutineIsActive(t *testing.T) {
	t.Parallel()
	p := testkit.NewProject(t)
	config := filepath.Join(p.Root, ".orbit", "config.yaml")
	data, err := os.ReadFile(config)
	require.NoError(t, err)
	require.Contains(t, string(data), "idle_timeout_seconds: 60\n")
	require.NoError(t, os.WriteFile(config, []byte(strings.Replace(string(data), "idle_timeout_seconds: 60\n", "idle_timeout_seconds: 1\n", 1)), 0o644))
	p.WriteFile(".orbit/jobs/tock.yaml", tockJob)
	p.WriteFile(".orbit/routines/tock.yaml", routineYAML("tock", "tock", routine.Skip, routine.Allow))
	r := p.Orbit("routine", "list")
	require.Equal(t, 0, r.Code, r.String())
	pid := p.EnginePID()
	require.NotZero(t, pid)

	time.Sleep(5 * time.Second)
	require.True(t, testkit.Runs(pid), "the engine stopped with an active routine")
	fired := len(routineHistory(t, p))
	assert.GreaterOrEqual(t, fired, 1, "ticks fired while no command ran")
	assert.Equal(t, pid, p.EnginePID())

	r = p.Orbit("routine", "pause", "tock")
	require.Equal(t, 0, r.Code, r.String())
	assert.True(t, testkit.WaitDead(pid, 20*time.Second), "the engine stays up with its only routine paused")
}

// TestRoutineShowSaysTheRetriesAndTheNextRetry: a routine whose run fails
// shows, once the failure is seen, its retry count and when the next
// retry is due (retry_at).
func TestRoutineShowSaysTheRetriesAndTheNextRetry(t *testing.T) {
	t.Parallel()
	p := testkit.NewProject(t)
	p.WriteFile(".orbit/jobs/flop.yaml", `
schemaVersion: 2
kind: Job
metadata: {name: flop}
spec:
  steps:
    - {id: f, spec: {type: deterministic, action: fail, config: {message: flopped}}}
`)
	second := (time.Now().Second() + 4) % 60
	p.WriteFile(".orbit/routines/flop.yaml", fmt.Sprintf(`schemaVersion: 2
kind: Routine
metadata: {name: flop}
spec:
  trigger: {cron: "%d * * * * *"}
  target: job:flop
  policy: {retries: {max: 2, backoff_minutes: 1}}
`, second))
	serve(t, p)
	var st routine.Status
	waitFor(t, "the failure to be seen", func() bool {
		r := p.Orbit("routine", "show", "flop", "--json")
		require.Equal(t, 0, r.Code, r.String())
		require.NoError(t, json.Unmarshal([]byte(r.Stdout), &st))
		return !st.State.RetryAt.IsZero()
	})
	assert.Equal(t, 0, st.State.Retries)
	r := p.Orbit("routine", "show", "flop")
	require.Equal(t, 0, r.Code, r.String())
	assert.Contains(t, r.Stdout, "Retries:   0 of 2 for the tick of "+st.State.LastFire.UTC().Format(time.RFC3339))
	assert.Contains(t, r.Stdout, "Next retry: "+st.State.RetryAt.UTC().Format(time.RFC3339))
}

// TestRoutineRunNowPauseAndResume: run-now fires a routine once outside
// its schedule (a run of its own, marked run-now, which is not the
// routine's last fire); a paused routine fires no tick; resumed, the ticks
// it was paused across are missed ticks: catch_up_once fires one run
// standing for them, skip fires none and records them once.
func TestRoutineRunNowPauseAndResume(t *testing.T) {
	t.Parallel()
	p := testkit.NewProject(t)
	p.WriteFile(".orbit/jobs/tock.yaml", tockJob)
	p.WriteFile(".orbit/routines/catch.yaml", routineYAML("catch", "tock", routine.CatchUpOnce, routine.Allow))
	p.WriteFile(".orbit/routines/skip.yaml", routineYAML("skip", "tock", routine.Skip, routine.Allow))
	serve(t, p)
	show := func(name string) routine.Status {
		t.Helper()
		return orbitJSON[routine.Status](t, p, "routine", "show", name, "--json")
	}
	waitFor(t, "both routines to fire", func() bool { return show("catch").State.Fired > 0 && show("skip").State.Fired > 0 })

	r := p.Orbit("routine", "run-now", "catch")
	require.Equal(t, 0, r.Code, r.String())
	manual := strings.TrimSpace(r.Stdout)
	waitFor(t, "the run-now run to finish", func() bool { return events.Terminal(runView(t, p, manual).State) })
	v := runView(t, p, manual)
	assert.Equal(t, events.StateSuccess, v.State)
	require.NotNil(t, v.Routine)
	assert.True(t, v.Routine.Manual)
	assert.NotEqual(t, routine.TickRunID("catch", v.Routine.Tick), manual, "a run of its own, not a tick's")
	assert.Equal(t, "routine:catch", v.Requester)
	assert.Contains(t, p.Orbit("run", "show", manual).Stdout, "catch, run-now at ")
	assert.NotEqual(t, manual, show("catch").State.LastRun, "run-now does not move the schedule")

	for _, name := range []string{"catch", "skip"} {
		r = p.Orbit("routine", "pause", name)
		require.Equal(t, 0, r.Code, r.String())
	}
	paused := time.Now()
	skippedBefore := show("skip").State.Skipped
	r = p.Orbit("routine", "pause", "catch")
	assert.Equal(t, 0, r.Code, r.String())
	assert.Contains(t, r.Stderr, "routine catch was already paused")
	assert.Contains(t, p.Orbit("routine", "show", "catch").Stdout, "State:     paused")
	assert.Contains(t, p.Orbit("routine", "list").Stdout, "paused")
	time.Sleep(7 * time.Second) // three ticks or more
	for _, name := range []string{"catch", "skip"} {
		r = p.Orbit("routine", "resume", name)
		require.Equal(t, 0, r.Code, r.String())
	}
	resumed := time.Now()
	waitFor(t, "a tick after the resume to fire", func() bool {
		for _, run := range routineHistory(t, p) {
			if run.Routine.Name == "skip" && run.Routine.Tick.After(resumed) {
				return true
			}
		}
		return false
	})

	var catchUps []events.RoutineTick
	for _, run := range routineHistory(t, p) {
		tick := *run.Routine
		if tick.Manual || !tick.Tick.After(paused) {
			continue
		}
		if tick.Tick.Before(resumed) {
			assert.Equal(t, "catch", tick.Name, "skip fired no tick it was paused across: %+v", tick)
		}
		if tick.Missed > 0 {
			assert.Equal(t, "catch", tick.Name, "%+v", tick)
			catchUps = append(catchUps, tick)
		}
	}
	require.Len(t, catchUps, 1, "one catch-up run for the ticks catch was paused across")
	assert.GreaterOrEqual(t, catchUps[0].Missed, 2)
	assert.True(t, catchUps[0].Tick.After(paused.Add(6*time.Second)), "the catch-up run stands for the last tick missed: %s", catchUps[0].Tick)
	assert.Equal(t, skippedBefore+1, show("skip").State.Skipped, "skip records the missed ticks once")

	r = p.Orbit("routine", "resume", "nosuch")
	assert.Equal(t, 2, r.Code, r.String())
	assert.Contains(t, r.Stderr, "no routine")
}

// TestRoutineListNamesATargetThatCannotRun: a routine whose job is not in
// the catalog loads (its ticks are recorded refused until the job exists),
// and routine list names it with its file, line and path; run-now of it is
// refused.
func TestRoutineListNamesATargetThatCannotRun(t *testing.T) {
	t.Parallel()
	p := testkit.NewProject(t)
	p.WriteFile(".orbit/jobs/tock.yaml", tockJob)
	p.WriteFile(".orbit/routines/orphan.yaml", routineEvery("@yearly", "orphan", "nosuchjob", routine.Skip, routine.Allow))
	p.WriteFile(".orbit/routines/fine.yaml", routineEvery("@yearly", "fine", "tock", routine.Skip, routine.Allow))
	serve(t, p)
	r := p.Orbit("routine", "list")
	require.Equal(t, 0, r.Code, r.String())
	assert.Contains(t, r.Stdout, "orphan")
	assert.Contains(t, r.Stderr, filepath.Join(".orbit", "routines", "orphan.yaml")+`:6: spec.target: no job "nosuchjob"`)
	assert.Contains(t, r.Stderr, "recorded skipped (refused) until it can run")
	assert.NotContains(t, r.Stderr, "fine.yaml")
	r = p.Orbit("routine", "run-now", "orphan")
	assert.Equal(t, 2, r.Code, r.String())
	assert.Contains(t, r.Stderr, `no job "nosuchjob"`)
}

// TestRoutineShowSaysWhyATickWasRefused: a tick whose run cannot be
// requested is recorded skipped (refused), and routine show says why.
func TestRoutineShowSaysWhyATickWasRefused(t *testing.T) {
	t.Parallel()
	p := testkit.NewProject(t)
	p.WriteFile(".orbit/routines/orphan.yaml", routineEvery("* * * * * *", "orphan", "nosuchjob", routine.Skip, routine.Allow))
	serve(t, p)
	waitFor(t, "a refused tick", func() bool {
		st := orbitJSON[routine.Status](t, p, "routine", "show", "orphan", "--json")
		return st.State.Reason == events.SkipRefused
	})
	r := p.Orbit("routine", "show", "orphan")
	require.Equal(t, 0, r.Code, r.String())
	assert.Contains(t, r.Stdout, "skipped (refused)")
	assert.Contains(t, r.Stdout, `Refused:   `)
	assert.Contains(t, r.Stdout, `no job "nosuchjob"`)
}
