package soak_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/orbitrun/orbit/engine"
	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/executor"
	"github.com/orbitrun/orbit/internal/testkit"
	"github.com/orbitrun/orbit/projector"
)

const (
	shortRuns  = 200
	fanItems   = 1000
	fanWorkers = 8

	// loadBound is how long every run has to reach a terminal state after
	// the first submission.
	loadBound = 4 * time.Minute
	// rssBound is a regression guard on the engine's peak resident set, set
	// with wide headroom over what was measured (see docs/benchmarks.md,
	// "The load soak"), not a target.
	rssBound = 512 << 20
)

// shortJob is three deterministic echo steps and one shell step. Its
// max_active_runs admits all the soak's runs at once (the default of 1
// would queue them one behind the other). Its output carries the run's own
// input back, so a run that got another's input would show.
var shortJob = fmt.Sprintf(`
schemaVersion: 2
kind: Job
metadata: {name: soak_short}
spec:
  max_active_runs: %d
  default_input: {n: 0}
  steps:
    - id: first
      spec: {type: deterministic, action: echo, config: {step: first, n: "{{ input.n }}"}}
    - id: shell
      spec: {type: shell, program: sh, args: ["-c", "true"], allowed_programs: [sh]}
    - id: second
      spec: {type: deterministic, action: echo, config: {step: second, from: "{{ steps.first.output.step }}"}}
    - id: last
      spec:
        type: deterministic
        action: echo
        config: {step: last, n: "{{ steps.first.output.n }}", exit_code: "{{ steps.shell.output.exit_code }}"}
`, shortRuns)

// fanJob fans a deterministic echo out over the items of its input, at most
// fanWorkers at a time. The worker's input is the item alone (a non-object
// default_input replaces the pipeline input), so each output is {n: item}.
var fanJob = fmt.Sprintf(`
schemaVersion: 2
kind: Job
metadata: {name: soak_fan_out}
spec:
  steps:
    - id: per_item
      fan_out:
        items: "{{ input.items }}"
        max_workers: %d
        worker:
          id: work
          default_input: "{{ item }}"
          spec: {type: deterministic, action: echo, config: {n: "{{ item }}"}}
      fan_in: {join: {mode: all}, collect: results}
`, fanWorkers)

// fanItemList is a permutation of 0..fanItems-1, so that an output in the
// wrong order cannot pass for the right one.
func fanItemList() []int {
	items := make([]int, fanItems)
	for i := range items {
		items[i] = i * 7919 % fanItems
	}
	return items
}

func TestSoak(t *testing.T) {
	if os.Getenv("ORBIT_SOAK") != "1" {
		t.Skip("the soak test runs with ORBIT_SOAK=1 (make soak)")
	}
	p := testkit.NewProject(t)
	durability := events.DurabilityStrict
	if d := os.Getenv("ORBIT_SOAK_DURABILITY"); d != "" {
		durability = d
		setDurability(t, p, d)
	}
	w := newWorkload(t)

	eng := startEngine(t, p)
	pid := eng.cmd.Process.Pid
	rssIdle := procStatus(pid, "VmRSS")
	sampler := sampleRSS(pid, 500*time.Millisecond)
	defer sampler.Stop()

	ctx, cancel := context.WithTimeout(context.Background(), loadBound+5*time.Minute)
	defer cancel()
	l, err := events.Dial(ctx, eng.url, events.Config{Name: "orbit-soak", NKeySeedFile: eng.seed(events.IdentityClient), LogKeyFile: engine.LogKeyPath(p.Root)})
	if err != nil {
		t.Fatalf("dialling the engine at %s: %v", eng.url, err)
	}
	defer l.Close()
	feed, err := l.Follow(ctx, events.FollowOptions{Filters: []string{
		events.TypeFilter(events.AggregateRun, events.RunFinished)}})
	if err != nil {
		t.Fatal(err)
	}
	defer feed.Stop()

	cpuBefore := cpuTime(pid)
	res := w.run(ctx, t, l, feed)
	cpu := cpuTime(pid) - cpuBefore
	if len(res.missing) > 0 {
		for _, line := range eng.Warnings() {
			t.Log("engine:", line)
		}
		for _, id := range res.missing[:min(3, len(res.missing))] {
			logTail(ctx, t, l, id)
		}
		t.FailNow()
	}
	succeeded := w.checkRuns(t, res)

	// The log, the views and what the engine holds, once every run ended.
	lg := w.checkLog(ctx, t, l)
	views := w.checkViews(ctx, t, l, lg.last)
	verify := p.Orbit("replay", "--verify", "--json")
	var report projector.ReplayReport
	if verify.Code != 0 {
		t.Errorf("orbit replay --verify: %s", verify)
	} else if err := json.Unmarshal([]byte(verify.Stdout), &report); err != nil {
		t.Errorf("orbit replay --verify --json: %v\n%s", err, verify.Stdout)
	} else if report.TotalDifferences != 0 || report.Applied < lg.last {
		t.Errorf("orbit replay --verify: %d differences, applied through %d of %d", report.TotalDifferences, report.Applied, lg.last)
	}
	queued, leases := leftovers(ctx, t, eng, 10*time.Second)
	if queued != 0 {
		t.Errorf("%d commands are still on the work queue after every run finished", queued)
	}
	if len(leases) != 0 {
		t.Errorf("%d leases are still held after every run finished: %v", len(leases), leases[:min(5, len(leases))])
	}
	var info engine.InfoReply
	if err := l.Request(ctx, engine.EndpointInfo, nil, &info); err != nil {
		t.Error(err)
	} else if info.Busy != 0 {
		t.Errorf("the engine still holds %d runs after all finished", info.Busy)
	}

	// Memory: the high-water mark the kernel kept, and what was sampled.
	peakSampled, samples := sampler.Stop()
	hwm := procStatus(pid, "VmHWM")
	rssEnd := procStatus(pid, "VmRSS")
	if hwm == 0 {
		t.Error("could not read the engine's VmHWM")
	}
	if hwm > rssBound {
		t.Errorf("the engine's peak RSS %s is over the bound of %s", mib(hwm), mib(rssBound))
	}
	stopped := eng.Stop(30 * time.Second)
	if !stopped {
		t.Error("the engine did not stop within 30s of SIGTERM")
	}
	warnings := eng.Warnings()
	for _, line := range warnings[:min(20, len(warnings))] {
		t.Log("engine:", line)
	}

	total := len(w.reqs)
	printSummary(t, [][2]string{
		{"runs", fmt.Sprintf("%d (%d short + 1 fan_out of %d items, max_workers %d), %d success",
			total, shortRuns, fanItems, fanWorkers, succeeded)},
		{"durability", durability},
		{"events appended", fmt.Sprintf("%d (%s)", lg.last, typeCounts(lg.byType))},
		{"submit time", res.submitTime.Round(time.Millisecond).String()},
		{"wall time", fmt.Sprintf("%s (short runs done after %s, fan_out after %s)", res.wall.Round(time.Millisecond),
			res.shortDone.Round(time.Millisecond), res.fanDone.Round(time.Millisecond))},
		{"runs/s", fmt.Sprintf("%.1f", float64(total)/res.wall.Seconds())},
		{"events/s", fmt.Sprintf("%.0f", float64(lg.last)/res.wall.Seconds())},
		{"short run latency", fmt.Sprintf("p50 %s, p95 %s, max %s",
			pct(res.latencies, 50), pct(res.latencies, 95), pct(res.latencies, 100))},
		{"fan_out items in flight", fmt.Sprintf("max %d (max_workers %d)", lg.inFlight, fanWorkers)},
		{"peak RSS engine", fmt.Sprintf("%s VmHWM (max sampled %s over %d samples; %s idle, %s at end; bound %s)",
			mib(hwm), mib(peakSampled), len(samples), mib(rssIdle), mib(rssEnd), mib(rssBound))},
		{"engine CPU", fmt.Sprintf("%s user+sys while the runs ran (%.0f%% of one core)",
			cpu.Round(10*time.Millisecond), 100*cpu.Seconds()/res.wall.Seconds())},
		{"peak RSS test process", mib(procStatus(0, "VmHWM"))},
		{"views verified", fmt.Sprintf("%d runs success in the runs view; replay --verify: %d events, %d differences",
			views, report.Events, report.TotalDifferences)},
		{"left behind", fmt.Sprintf("%d queued commands, %d leases", queued, len(leases))},
		{"engine warnings", fmt.Sprintf("%d logged", len(warnings))},
		{"engine stopped", fmt.Sprintf("%t (SIGTERM)", stopped)},
	})
}

// workload is the soak's runs: the requests, built before the engine
// starts so that submitting is all the load phase does, and what each
// run's output must be.
type workload struct {
	reqs  []*executor.RunRequest
	n     map[string]int // short run id → its input n
	fanID string
	items []int
}

func newWorkload(t *testing.T) *workload {
	t.Helper()
	w := &workload{n: map[string]int{}, items: fanItemList()}
	short := parseJob(t, "soak_short.yaml", shortJob)
	for i := range shortRuns {
		req, err := executor.NewRunRequest(short, map[string]any{"n": i}, "soak")
		if err != nil {
			t.Fatal(err)
		}
		w.reqs = append(w.reqs, req)
		w.n[req.RunID] = i
	}
	fan, err := executor.NewRunRequest(parseJob(t, "soak_fan_out.yaml", fanJob), map[string]any{"items": w.items}, "soak")
	if err != nil {
		t.Fatal(err)
	}
	w.reqs = append(w.reqs, fan)
	w.fanID = fan.RunID
	return w
}

func (w *workload) submitted(id string) bool {
	_, short := w.n[id]
	return short || id == w.fanID
}

// finished is what the test saw of one run's run.finished events.
type finished struct {
	count int
	data  events.RunFinishedData
	at    time.Time
}

// loadResult is what the load phase measured.
type loadResult struct {
	finished   map[string]*finished
	missing    []string      // runs without a run.finished when loadBound passed
	submitTime time.Duration // until the last request was stored
	wall       time.Duration // until the last run.finished arrived
	shortDone  time.Duration
	fanDone    time.Duration
	latencies  []time.Duration // short runs, submit to run.finished, sorted
}

// run submits every request at once, each from its own goroutine as 201
// clients would, and waits until each run's run.finished has arrived on
// feed or loadBound has passed (an error: the runs left are named).
func (w *workload) run(ctx context.Context, t *testing.T, l *events.Log, feed *events.Feed) *loadResult {
	t.Helper()
	start := time.Now()
	submitAt := make(map[string]time.Time, len(w.reqs))
	var mu sync.Mutex
	var wg sync.WaitGroup
	gate := make(chan struct{})
	errs := make(chan error, len(w.reqs))
	for _, req := range w.reqs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-gate
			at := time.Now()
			if err := l.Request(ctx, engine.EndpointSubmit, req, nil); err != nil {
				errs <- fmt.Errorf("submitting %s: %w", req.RunID, err)
				return
			}
			mu.Lock()
			submitAt[req.RunID] = at
			mu.Unlock()
		}()
	}
	close(gate)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if t.Failed() {
		t.FailNow()
	}
	res := &loadResult{finished: map[string]*finished{}, submitTime: time.Since(start)}

	var foreign []string
	deadline := time.NewTimer(loadBound - time.Since(start))
	defer deadline.Stop()
wait:
	for len(res.finished) < len(w.reqs) {
		select {
		case ev, ok := <-feed.Events():
			if !ok {
				t.Fatalf("following run.finished ended: %v", feed.Err())
			}
			if !w.submitted(ev.RunID) {
				foreign = append(foreign, ev.RunID)
				continue
			}
			f := res.finished[ev.RunID]
			if f == nil {
				f = &finished{at: time.Now()}
				res.finished[ev.RunID] = f
			}
			f.count++
			if err := ev.Decode(&f.data); err != nil {
				t.Errorf("run %s: decoding run.finished: %v", ev.RunID, err)
			}
		case <-deadline.C:
			break wait
		}
	}
	res.wall = time.Since(start)
	if len(foreign) > 0 {
		t.Errorf("run.finished of %d runs nobody submitted: %v", len(foreign), foreign[:min(5, len(foreign))])
	}
	if len(res.finished) < len(w.reqs) {
		for _, req := range w.reqs {
			if res.finished[req.RunID] == nil {
				res.missing = append(res.missing, req.RunID)
			}
		}
		t.Errorf("after %s, %d of %d runs had not finished; first missing: %v",
			loadBound, len(res.missing), len(w.reqs), res.missing[:min(5, len(res.missing))])
		return res
	}
	for id, f := range res.finished {
		if id == w.fanID {
			res.fanDone = f.at.Sub(start)
			continue
		}
		res.shortDone = max(res.shortDone, f.at.Sub(start))
		res.latencies = append(res.latencies, f.at.Sub(submitAt[id]))
	}
	slices.Sort(res.latencies)
	return res
}

// logTail logs the last events of a run that did not finish: where it
// stopped.
func logTail(ctx context.Context, t *testing.T, l *events.Log, runID string) {
	t.Helper()
	evs, err := l.Read(ctx, events.FollowOptions{Filters: []string{events.RunFilter(runID)}})
	if err != nil {
		t.Logf("run %s: reading its events: %v", runID, err)
		return
	}
	var tail []string
	for _, ev := range evs[max(0, len(evs)-12):] {
		tail = append(tail, fmt.Sprintf("%d %s %s", ev.Seq, ev.Type, ev.StepKey))
	}
	t.Logf("run %s: %d events, the last: %s", runID, len(evs), strings.Join(tail, "; "))
}

// printSummary prints the figures as a table, to the test log and to
// stdout.
func printSummary(t *testing.T, rows [][2]string) {
	t.Helper()
	var b strings.Builder
	b.WriteString("\nsoak summary\n")
	for _, r := range rows {
		fmt.Fprintf(&b, "  %-24s %s\n", r[0], r[1])
	}
	t.Log(b.String())
	fmt.Print(b.String())
}
