package routine_test

import (
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/assets"
	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/executor"
	"github.com/orbitrun/orbit/internal/testkit"
	"github.com/orbitrun/orbit/routine"
)

const echoJob = `schemaVersion: 2
kind: Job
metadata: {name: tick}
spec:
  steps:
    - id: say
      spec: {type: deterministic, action: echo}
`

// clock is a test clock several schedulers share.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time  { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clock) set(t time.Time) { c.mu.Lock(); c.now = t; c.mu.Unlock() }

// rig is a log, a routine every 10 s of the clock and n schedulers on it,
// as n engines would run them, and the run requests they sent.
type rig struct {
	t      *testing.T
	log    *events.Log
	clock  *clock
	scheds []*routine.Scheduler
	mu     sync.Mutex
	runs   []executor.RunRequest
	// refuse makes the run requests fail, as a job removed or disabled does.
	refuse atomic.Bool
}

func newRig(t *testing.T, r *routine.Routine, n int) *rig {
	ctx := testkit.Context(t)
	job, err := assets.ParseJob("tick.yaml", []byte(echoJob), nil)
	require.NoError(t, err)
	g := &rig{t: t, log: testkit.StartLog(t, events.Config{}), clock: &clock{now: at("2026-11-28T16:00:01Z")}}
	cfg := routine.Config{Log: g.log, Now: g.clock.Now, Request: func(name string, input any) (*executor.RunRequest, error) {
		if g.refuse.Load() {
			return nil, errors.New("job tick is disabled")
		}
		return executor.NewRunRequest(job, input, "")
	}}
	for range n {
		g.scheds = append(g.scheds, routine.NewScheduler(cfg))
	}
	stop, err := g.log.Consume(ctx, events.ConsumerSpec{Durable: "test", Command: "run.request"}, func(c *events.Command) {
		var req executor.RunRequest
		require.NoError(t, c.Decode(&req))
		g.mu.Lock()
		g.runs = append(g.runs, req)
		g.mu.Unlock()
		_ = c.Ack(ctx)
	})
	require.NoError(t, err)
	t.Cleanup(func() { stop.Stop() })
	return g
}

// tick runs every scheduler's Tick at once, at the clock's time.
func (g *rig) tick(r *routine.Routine) {
	var wg sync.WaitGroup
	for _, s := range g.scheds {
		wg.Go(func() {
			_, err := s.Tick(testkit.Context(g.t), r)
			assert.NoError(g.t, err)
		})
	}
	wg.Wait()
}

// requested waits until n run requests have arrived and returns them.
func (g *rig) requested(n int) []executor.RunRequest {
	g.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		g.mu.Lock()
		got := append([]executor.RunRequest(nil), g.runs...)
		g.mu.Unlock()
		if len(got) >= n {
			time.Sleep(200 * time.Millisecond) // any extra one too
			g.mu.Lock()
			defer g.mu.Unlock()
			return append([]executor.RunRequest(nil), g.runs...)
		}
		time.Sleep(20 * time.Millisecond)
	}
	g.t.Fatalf("%d run requests arrived, want %d", len(g.runs), n)
	return nil
}

func (g *rig) skipped() []events.RoutineSkippedData {
	evs, err := g.log.Read(testkit.Context(g.t), events.FollowOptions{Filters: []string{events.TypeFilter(events.AggregateRun, events.RoutineSkipped)}})
	require.NoError(g.t, err)
	out := make([]events.RoutineSkippedData, len(evs))
	for i, ev := range evs {
		require.NoError(g.t, ev.Decode(&out[i]))
		want := routine.TickRunID(out[i].Routine, out[i].Tick)
		if out[i].Retry > 0 {
			want = routine.RetryRunID(out[i].Routine, out[i].Tick, out[i].Retry)
		}
		assert.Equal(g.t, want, ev.RunID)
	}
	return out
}

// finish records run's end in state, as the engine that ran it would.
func (g *rig) finish(run, state string) {
	g.t.Helper()
	_, err := g.log.Append(testkit.Context(g.t), events.Event{ID: events.NewID(), Type: events.RunFinished, RunID: run, Job: "tick"}, events.RunFinishedData{State: state})
	require.NoError(g.t, err)
}

// decided leaves routine r's state at st, as an engine that decided st
// and died before carrying it out would.
func (g *rig) decided(st routine.State) {
	g.t.Helper()
	ctx := testkit.Context(g.t)
	_, rev, err := routine.ReadState(ctx, g.log, "r")
	require.NoError(g.t, err)
	require.NoError(g.t, routine.WriteStateForTest(ctx, g.log, "r", st, rev))
}

func every10s(t *testing.T, missed, overlap string) *routine.Routine {
	r, err := routine.Parse("r.yaml", []byte("schemaVersion: 2\nkind: Routine\nmetadata: {name: r}\nspec:\n  trigger: {cron: '*/10 * * * * *', missed_run: "+missed+"}\n  target: job:tick\n  input: {n: 1}\n  policy: {overlap: "+overlap+"}\n"))
	require.NoError(t, err)
	return r
}

// routineOf parses routine r, targeting job tick, with trigger and policy
// written in YAML.
func routineOf(t *testing.T, trigger, policy string) *routine.Routine {
	t.Helper()
	r, err := routine.Parse("r.yaml", []byte("schemaVersion: 2\nkind: Routine\nmetadata: {name: r}\nspec:\n  trigger: "+trigger+"\n  target: job:tick\n  policy: "+policy+"\n"))
	require.NoError(t, err)
	return r
}

// failFirstRun ticks r past 17:00's tick, fails its run and ticks again,
// so that the schedulers have seen the failure at 17:00:10.
func (g *rig) failFirstRun(r *routine.Routine) {
	g.t.Helper()
	g.tick(r)
	g.clock.set(at("2026-11-28T17:00:00.5Z"))
	g.tick(r)
	g.finish(g.requested(1)[0].RunID, events.StateFailed)
	g.clock.set(at("2026-11-28T17:00:10Z"))
	g.tick(r)
}

// TestThreeSchedulersFireEachTickOnce: engines deciding the same ticks at
// the same moments start one run per tick, named by the routine and the
// tick, with the routine's input.
func TestThreeSchedulersFireEachTickOnce(t *testing.T) {
	r := every10s(t, routine.Skip, routine.Allow)
	g := newRig(t, r, 3)
	g.tick(r) // first sight: nothing before now fires
	start := g.clock.Now()
	for i := 1; i <= 6; i++ {
		g.clock.set(start.Add(time.Duration(i)*10*time.Second - time.Second + 300*time.Millisecond))
		g.tick(r)
	}
	runs := g.requested(6)
	require.Len(t, runs, 6)
	for i, req := range runs {
		tick := at("2026-11-28T16:00:10Z").Add(time.Duration(i) * 10 * time.Second)
		require.NotNil(t, req.Routine)
		assert.Equal(t, events.RoutineTick{Name: "r", Tick: tick}, *req.Routine)
		assert.Equal(t, routine.TickRunID("r", tick), req.RunID)
		assert.Equal(t, "routine:r", req.Requester)
		assert.Equal(t, map[string]any{"n": float64(1)}, req.Input)
	}
	st, _, err := routine.ReadState(testkit.Context(t), g.log, "r")
	require.NoError(t, err)
	assert.Equal(t, 6, st.Fired)
	assert.True(t, st.Acted)
}

// TestMissedTicks: three ticks with no engine up; catch_up_once fires one
// run for the last of them, skip fires none and records them once.
func TestMissedTicks(t *testing.T) {
	for _, policy := range []string{routine.CatchUpOnce, routine.Skip} {
		t.Run(policy, func(t *testing.T) {
			r := every10s(t, policy, routine.Allow)
			g := newRig(t, r, 2)
			g.tick(r)
			g.clock.set(at("2026-11-28T16:00:35Z")) // 10, 20 and 30 passed
			g.tick(r)
			g.clock.set(at("2026-11-28T16:00:41Z")) // and 40 is on time
			g.tick(r)
			if policy == routine.CatchUpOnce {
				runs := g.requested(2)
				require.Len(t, runs, 2)
				assert.Equal(t, events.RoutineTick{Name: "r", Tick: at("2026-11-28T16:00:30Z"), Missed: 2}, *runs[0].Routine)
				assert.Equal(t, events.RoutineTick{Name: "r", Tick: at("2026-11-28T16:00:40Z")}, *runs[1].Routine)
				assert.Empty(t, g.skipped())
				return
			}
			runs := g.requested(1)
			require.Len(t, runs, 1)
			assert.Equal(t, at("2026-11-28T16:00:40Z"), runs[0].Routine.Tick)
			assert.Equal(t, []events.RoutineSkippedData{{Routine: "r", Tick: at("2026-11-28T16:00:30Z"), Reason: events.SkipMissed, Ticks: 3}}, g.skipped())
		})
	}
}

// TestOverlapForbidSkipsWhileTheRunLives: a tick whose previous run has
// not finished is skipped and recorded with the run that still runs.
func TestOverlapForbidSkipsWhileTheRunLives(t *testing.T) {
	r := every10s(t, routine.Skip, routine.Forbid)
	g := newRig(t, r, 2)
	g.tick(r)
	g.clock.set(at("2026-11-28T16:00:10.5Z"))
	g.tick(r)
	first := g.requested(1)[0].RunID
	g.clock.set(at("2026-11-28T16:00:20.5Z"))
	g.tick(r)
	assert.Equal(t, []events.RoutineSkippedData{{Routine: "r", Tick: at("2026-11-28T16:00:20Z"), Reason: events.SkipOverlap, Running: first, Ticks: 1}}, g.skipped())
	g.finish(first, events.StateSuccess)
	g.clock.set(at("2026-11-28T16:00:30.5Z"))
	g.tick(r)
	runs := g.requested(2)
	require.Len(t, runs, 2)
	assert.Equal(t, at("2026-11-28T16:00:30Z"), runs[1].Routine.Tick)
}

// TestPausedRoutineDecidesNothingAndCatchesUpOnResume: while paused no
// tick fires; resumed, the ticks that passed are missed ticks.
func TestPausedRoutineDecidesNothingAndCatchesUpOnResume(t *testing.T) {
	r := every10s(t, routine.CatchUpOnce, routine.Allow)
	g := newRig(t, r, 1)
	g.tick(r)
	ctx := testkit.Context(t)
	changed, err := routine.SetPaused(ctx, g.log, "r", true, g.clock.Now())
	require.NoError(t, err)
	assert.True(t, changed)
	g.clock.set(at("2026-11-28T16:00:25Z"))
	g.tick(r)
	time.Sleep(300 * time.Millisecond)
	g.mu.Lock()
	assert.Empty(t, g.runs, "paused")
	g.mu.Unlock()
	changed, err = routine.SetPaused(ctx, g.log, "r", false, g.clock.Now())
	require.NoError(t, err)
	assert.True(t, changed)
	g.tick(r)
	runs := g.requested(1)
	require.Len(t, runs, 1)
	assert.Equal(t, events.RoutineTick{Name: "r", Tick: at("2026-11-28T16:00:20Z"), Missed: 1}, *runs[0].Routine)
}

// TestADecisionIsCarriedOutByTheNextEngine: an engine that decided a tick
// and died before sending its run leaves the key unacted; the next
// scheduler sends the run, with the same id.
func TestADecisionIsCarriedOutByTheNextEngine(t *testing.T) {
	r := every10s(t, routine.Skip, routine.Allow)
	g := newRig(t, r, 1)
	g.tick(r)
	tick := at("2026-11-28T16:00:10Z")
	g.decided(routine.State{Last: tick, Action: routine.ActionFired, Run: routine.TickRunID("r", tick), LastRun: routine.TickRunID("r", tick), LastFire: tick, Fired: 1})
	g.clock.set(at("2026-11-28T16:00:12Z"))
	g.tick(r)
	runs := g.requested(1)
	require.Len(t, runs, 1)
	assert.Equal(t, routine.TickRunID("r", tick), runs[0].RunID)
}

// TestARunSentLateIsNoOverlapOfTheTicksItMissed: an engine decided a tick
// and died before sending its run; the next engine, started after the
// following tick, sends it. That tick passed while no engine could fire it:
// under overlap: forbid it is a missed tick, not an overlap of the late
// run, and the catch-up run stands for it once the late run has finished.
func TestARunSentLateIsNoOverlapOfTheTicksItMissed(t *testing.T) {
	r := every10s(t, routine.CatchUpOnce, routine.Forbid)
	g := newRig(t, r, 1)
	g.tick(r)
	tick := at("2026-11-28T16:00:10Z")
	late := routine.TickRunID("r", tick)
	g.decided(routine.State{Last: tick, Action: routine.ActionFired, Run: late, LastRun: late, LastFire: tick, Fired: 1})
	g.clock.set(at("2026-11-28T16:00:25Z")) // 20 passed with no engine
	g.tick(r)
	require.Equal(t, late, g.requested(1)[0].RunID)
	g.tick(r)
	assert.Empty(t, g.skipped(), "the late run did not run at 20")
	g.finish(late, events.StateSuccess)
	g.clock.set(at("2026-11-28T16:00:31Z"))
	g.tick(r)
	runs := g.requested(2)
	require.Len(t, runs, 2)
	assert.Equal(t, events.RoutineTick{Name: "r", Tick: at("2026-11-28T16:00:30Z"), Missed: 1}, *runs[1].Routine)
	assert.Empty(t, g.skipped())
	g.clock.set(at("2026-11-28T16:00:40.5Z"))
	g.tick(r)
	assert.Equal(t, []events.RoutineSkippedData{{Routine: "r", Tick: at("2026-11-28T16:00:40Z"), Reason: events.SkipOverlap, Running: runs[1].RunID, Ticks: 1}}, g.skipped(),
		"a run sent on time still overlaps the next tick")
}

// TestTimeoutCancelsALiveRun: once timeout_minutes have passed since its
// tick, the routine's run, still live, is asked to cancel, once.
func TestTimeoutCancelsALiveRun(t *testing.T) {
	r := routineOf(t, "{cron: '0 * * * * *'}", "{timeout_minutes: 2}")
	g := newRig(t, r, 2)
	g.tick(r)
	g.clock.set(at("2026-11-28T16:01:00.5Z"))
	g.tick(r)
	run := g.requested(1)[0].RunID
	cancels := func() []events.Event {
		evs, err := g.log.Read(testkit.Context(t), events.FollowOptions{Filters: []string{events.EventSubject(events.AggregateRun, run, events.RunCancelRequested)}})
		require.NoError(t, err)
		return evs
	}
	g.clock.set(at("2026-11-28T16:02:59Z"))
	g.tick(r)
	assert.Empty(t, cancels(), "within its timeout")
	g.clock.set(at("2026-11-28T16:03:01Z"))
	g.tick(r)
	evs := cancels()
	require.Len(t, evs, 1)
	var d events.RunCancelRequestedData
	require.NoError(t, evs[0].Decode(&d))
	assert.Equal(t, "routine:r", d.Requester)
	assert.Contains(t, d.Reason, "timeout_minutes (2)")
}

// TestARefusedRetryIsRecordedSkipped: a retry whose run is refused is
// recorded as a skipped tick is (routine.skipped, reason refused, with the
// retry), counted skipped, and no further retry waits on a run that does
// not exist.
func TestARefusedRetryIsRecordedSkipped(t *testing.T) {
	r := routineOf(t, "{cron: '0 0 * * * *'}", "{retries: {max: 2, backoff_minutes: 1}}")
	g := newRig(t, r, 2)
	ctx := testkit.Context(t)
	tick := at("2026-11-28T17:00:00Z")
	g.failFirstRun(r)
	st, _, err := routine.ReadState(ctx, g.log, "r")
	require.NoError(t, err)
	assert.Equal(t, at("2026-11-28T17:01:10Z"), st.RetryAt.UTC())
	g.refuse.Store(true)
	g.clock.set(at("2026-11-28T17:01:10Z"))
	g.tick(r)
	assert.Equal(t, []events.RoutineSkippedData{{Routine: "r", Tick: tick, Reason: events.SkipRefused, Ticks: 1, Error: "job tick is disabled", Retry: 1}}, g.skipped())
	st, _, err = routine.ReadState(ctx, g.log, "r")
	require.NoError(t, err)
	assert.Equal(t, routine.ActionSkipped, st.Action)
	assert.Equal(t, events.SkipRefused, st.Reason)
	assert.Equal(t, 1, st.Skipped)
	assert.Equal(t, 1, st.Retries)
	assert.Empty(t, st.LastRun, "the refused retry has no run")
	g.refuse.Store(false)
	g.clock.set(at("2026-11-28T17:05:00Z"))
	g.tick(r)
	assert.Len(t, g.requested(1), 1, "no retry after a refused one")
}

// TestARefusedRunIsNoOverlap: a tick whose run is refused fires nothing,
// so under overlap: forbid the next tick is no overlap of it.
func TestARefusedRunIsNoOverlap(t *testing.T) {
	r := every10s(t, routine.Skip, routine.Forbid)
	g := newRig(t, r, 1)
	g.tick(r)
	g.refuse.Store(true)
	g.clock.set(at("2026-11-28T16:00:10.5Z"))
	g.tick(r)
	g.refuse.Store(false)
	g.clock.set(at("2026-11-28T16:00:20.5Z"))
	g.tick(r)
	runs := g.requested(1)
	require.Len(t, runs, 1)
	assert.Equal(t, at("2026-11-28T16:00:20Z"), runs[0].Routine.Tick)
	skipped := g.skipped()
	require.Len(t, skipped, 1)
	assert.Equal(t, events.SkipRefused, skipped[0].Reason)
	st, _, err := routine.ReadState(testkit.Context(t), g.log, "r")
	require.NoError(t, err)
	assert.Equal(t, 1, st.Fired)
	assert.Equal(t, 1, st.Skipped)
	assert.Empty(t, st.Error, "a tick that fired clears the refusal before it")
}

// TestARefusedTickLeavesTheLastFire: a tick whose run is refused is a
// skipped tick: the routine's last fire and last run (what list, show, the
// console and /metrics say, and what overlap and the timeout read) stay
// those of the run fired before it.
func TestARefusedTickLeavesTheLastFire(t *testing.T) {
	r := every10s(t, routine.Skip, routine.Allow)
	g := newRig(t, r, 1)
	g.tick(r)
	g.clock.set(at("2026-11-28T16:00:10.5Z"))
	g.tick(r)
	require.Len(t, g.requested(1), 1)
	g.refuse.Store(true)
	g.clock.set(at("2026-11-28T16:00:20.5Z"))
	g.tick(r)
	st, _, err := routine.ReadState(testkit.Context(t), g.log, "r")
	require.NoError(t, err)
	assert.Equal(t, at("2026-11-28T16:00:20Z"), st.Last)
	assert.Equal(t, routine.ActionSkipped, st.Action)
	assert.Equal(t, events.SkipRefused, st.Reason)
	assert.Equal(t, "job tick is disabled", st.Error, "the state says why the request was refused")
	assert.Equal(t, at("2026-11-28T16:00:10Z"), st.LastFire, "the last fire is the tick a run was fired for")
	assert.Equal(t, routine.TickRunID("r", at("2026-11-28T16:00:10Z")), st.LastRun)
	assert.Equal(t, 1, st.Fired)
	assert.Equal(t, 1, st.Skipped)
}

// TestTimeoutDoesNotCountThePausedTime: a run paused for a minute within
// its two minutes is cancelled a minute later than it would have been,
// and one paused until now is not cancelled while the pause lasts.
func TestTimeoutDoesNotCountThePausedTime(t *testing.T) {
	r := routineOf(t, "{cron: '0 * * * * *'}", "{timeout_minutes: 2}")
	g := newRig(t, r, 1)
	ctx := testkit.Context(t)
	g.tick(r)
	g.clock.set(at("2026-11-28T16:01:00.5Z"))
	g.tick(r)
	run := g.requested(1)[0].RunID
	pause := func(typ, when string) {
		var data any = events.RunPausedData{}
		if typ == events.RunUnpaused {
			data = events.RunUnpausedData{}
		}
		_, err := g.log.Append(ctx, events.Event{ID: events.NewID(), Type: typ, Time: at(when), RunID: run, Job: "tick"}, data)
		require.NoError(t, err)
	}
	cancels := func() int {
		evs, err := g.log.Read(ctx, events.FollowOptions{Filters: []string{events.EventSubject(events.AggregateRun, run, events.RunCancelRequested)}})
		require.NoError(t, err)
		return len(evs)
	}
	pause(events.RunPaused, "2026-11-28T16:01:30Z")
	pause(events.RunUnpaused, "2026-11-28T16:02:30Z")
	g.clock.set(at("2026-11-28T16:03:30Z"))
	g.tick(r)
	assert.Zero(t, cancels(), "a minute of its timeout was paused")
	pause(events.RunPaused, "2026-11-28T16:03:40Z")
	g.clock.set(at("2026-11-28T16:09:00Z"))
	g.tick(r)
	assert.Zero(t, cancels(), "paused since before its deadline")
	pause(events.RunUnpaused, "2026-11-28T16:09:00Z")
	g.clock.set(at("2026-11-28T16:09:19Z"))
	g.tick(r)
	assert.Zero(t, cancels(), "20 s of its timeout were left when it was paused")
	g.clock.set(at("2026-11-28T16:09:21Z"))
	g.tick(r)
	assert.Equal(t, 1, cancels())
}

// TestRetriesRunAFailedTickAgainAfterTheBackoff: a tick's run that fails is
// run again, once across the engines, when the backoff has passed since the
// failure was seen, up to policy.retries.max times, each retry named by
// the tick and its attempt.
func TestRetriesRunAFailedTickAgainAfterTheBackoff(t *testing.T) {
	r := routineOf(t, "{cron: '0 0 * * * *'}", "{retries: {max: 2, backoff_minutes: 1}}")
	g := newRig(t, r, 3)
	ctx := testkit.Context(t)
	tick := at("2026-11-28T17:00:00Z")
	g.failFirstRun(r) // the retry is due at 17:01:10
	g.clock.set(at("2026-11-28T17:01:09Z"))
	g.tick(r)
	require.Len(t, g.requested(1), 1, "within the backoff")
	g.clock.set(at("2026-11-28T17:01:10Z"))
	g.tick(r)
	runs := g.requested(2)
	require.Len(t, runs, 2)
	assert.Equal(t, routine.RetryRunID("r", tick, 1), runs[1].RunID)
	assert.Equal(t, events.RoutineTick{Name: "r", Tick: tick, Retry: 1}, *runs[1].Routine)
	assert.Equal(t, "routine:r", runs[1].Requester)

	g.finish(runs[1].RunID, events.StateFailed)
	g.clock.set(at("2026-11-28T17:02:00Z"))
	g.tick(r)
	g.clock.set(at("2026-11-28T17:03:00Z"))
	g.tick(r)
	runs = g.requested(3)
	require.Len(t, runs, 3)
	assert.Equal(t, events.RoutineTick{Name: "r", Tick: tick, Retry: 2}, *runs[2].Routine)

	g.finish(runs[2].RunID, events.StateFailed)
	g.clock.set(at("2026-11-28T17:05:00Z"))
	g.tick(r)
	g.clock.set(at("2026-11-28T17:07:00Z"))
	g.tick(r)
	require.Len(t, g.requested(3), 3, "max is 2")
	st, _, err := routine.ReadState(ctx, g.log, "r")
	require.NoError(t, err)
	assert.Equal(t, 2, st.Retries)
	assert.Equal(t, 1, st.Fired)
	assert.Equal(t, runs[2].RunID, st.LastRun)
}

// TestASucceededRunIsNotRetried: retries are for failed runs only.
func TestASucceededRunIsNotRetried(t *testing.T) {
	r := routineOf(t, "{cron: '0 0 * * * *'}", "{retries: {max: 3}}")
	g := newRig(t, r, 2)
	g.tick(r)
	g.clock.set(at("2026-11-28T17:00:00.5Z"))
	g.tick(r)
	run := g.requested(1)[0].RunID
	g.finish(run, events.StateSuccess)
	g.clock.set(at("2026-11-28T17:00:30Z"))
	g.tick(r)
	g.tick(r)
	require.Len(t, g.requested(1), 1)
}

// TestARetryDecidedByADeadEngineIsCarriedOut: a retry decided and not yet
// sent (the engine died between) is sent by the next scheduler, with the
// id of the tick's attempt; a new tick then ends the old tick's retries.
func TestARetryDecidedByADeadEngineIsCarriedOut(t *testing.T) {
	r := routineOf(t, "{cron: '0 0 * * * *'}", "{retries: {max: 5}}")
	g := newRig(t, r, 2)
	ctx := testkit.Context(t)
	g.tick(r)
	tick := at("2026-11-28T17:00:00Z")
	retry := routine.RetryRunID("r", tick, 1)
	g.decided(routine.State{Last: tick, Action: routine.ActionRetried, Run: retry, LastRun: retry, LastFire: tick, Fired: 1, Retries: 1})
	g.clock.set(at("2026-11-28T17:00:30Z"))
	g.tick(r)
	runs := g.requested(1)
	require.Len(t, runs, 1)
	assert.Equal(t, retry, runs[0].RunID)
	assert.Equal(t, events.RoutineTick{Name: "r", Tick: tick, Retry: 1}, *runs[0].Routine)

	g.finish(retry, events.StateFailed)
	g.clock.set(at("2026-11-28T18:00:00.5Z"))
	g.tick(r)
	runs = g.requested(2)
	require.Len(t, runs, 2)
	assert.Equal(t, events.RoutineTick{Name: "r", Tick: at("2026-11-28T18:00:00Z")}, *runs[1].Routine)
	st, _, err := routine.ReadState(ctx, g.log, "r")
	require.NoError(t, err)
	assert.Equal(t, 0, st.Retries)
	assert.True(t, st.RetryAt.IsZero())
}
