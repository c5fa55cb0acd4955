package soak_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/orbitrun/orbit/assets"
	"github.com/orbitrun/orbit/engine"
	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/internal/testkit"
	"github.com/orbitrun/orbit/projector"
)

// checkRuns checks that every run ended in success with one run.finished
// and its own output, and returns how many did.
func (w *workload) checkRuns(t *testing.T, res *loadResult) int {
	t.Helper()
	ok := 0
	for id, f := range res.finished {
		if f.count != 1 {
			t.Errorf("run %s: %d run.finished events delivered", id, f.count)
		}
		if f.data.State != events.StateSuccess {
			t.Errorf("run %s ended %s: %+v", id, f.data.State, f.data.Error)
			continue
		}
		if id == w.fanID {
			if checkFanOutput(t, f.data.Output, w.items) {
				ok++
			}
			continue
		}
		out, _ := f.data.Output.(map[string]any)
		if out["n"] != float64(w.n[id]) || out["exit_code"] != float64(0) {
			t.Errorf("run %s (n=%d): output %v", id, w.n[id], f.data.Output)
			continue
		}
		ok++
	}
	return ok
}

// logFacts is what the whole log, read again from the start, says.
type logFacts struct {
	last     uint64         // the stream's last sequence: events appended
	byType   map[string]int // events by type
	inFlight int            // most fan-out items in flight at once
}

// checkLog reads the whole log and checks that it holds exactly one
// run.finished per submitted run and nothing for others, that no run was
// queued, and that the fan-out kept within max_workers.
func (w *workload) checkLog(ctx context.Context, t *testing.T, l *events.Log) logFacts {
	t.Helper()
	last, err := l.LastSeq(ctx)
	if err != nil {
		t.Fatal(err)
	}
	history, err := l.Read(ctx, events.FollowOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if uint64(len(history)) != last {
		t.Errorf("read %d events, the stream's last sequence is %d", len(history), last)
	}
	facts := logFacts{last: last, byType: map[string]int{}}
	perRun := map[string]int{}
	for _, ev := range history {
		facts.byType[ev.Type]++
		if ev.Type == events.RunFinished {
			perRun[ev.RunID]++
		}
	}
	for _, req := range w.reqs {
		if perRun[req.RunID] != 1 {
			t.Errorf("run %s has %d run.finished events in the log", req.RunID, perRun[req.RunID])
		}
	}
	if len(perRun) != len(w.reqs) {
		t.Errorf("the log has run.finished for %d runs, %d were submitted", len(perRun), len(w.reqs))
	}
	if n := facts.byType[events.RunQueued]; n != 0 {
		t.Errorf("%d runs were queued; max_active_runs should have admitted them all", n)
	}
	if n := facts.byType[events.FanoutItem]; n != 0 {
		t.Errorf("the log has %d fanout.item events, want none (step protocol 2)", n)
	}
	facts.inFlight = fanInFlight(history, w.fanID)
	if facts.inFlight > fanWorkers {
		t.Errorf("the fan-out had %d items in flight, max_workers is %d", facts.inFlight, fanWorkers)
	}
	return facts
}

// checkFanOutput checks that the fan-out's output lists every item's
// worker output, in item order, and reports whether it does.
func checkFanOutput(t *testing.T, output any, items []int) bool {
	t.Helper()
	list, ok := output.([]any)
	if !ok {
		t.Errorf("fan-out output is %T, want a list", output)
		return false
	}
	if len(list) != len(items) {
		t.Errorf("fan-out output has %d entries, want %d", len(list), len(items))
		return false
	}
	wrong := 0
	for i, entry := range list {
		m, _ := entry.(map[string]any)
		if m["n"] != float64(items[i]) {
			if wrong < 5 {
				t.Errorf("fan-out output[%d] = %v, want {n: %d}", i, entry, items[i])
			}
			wrong++
		}
	}
	if wrong > 0 {
		t.Errorf("%d fan-out entries out of place", wrong)
	}
	return wrong == 0
}

// itemKey matches the key of a fan-out item's worker step: per_item/<i>.
var itemKey = regexp.MustCompile(`^per_item/\d+$`)

// fanInFlight returns the largest number of fan-out items that had started
// (their worker's step.started) and not finished (its step.finished) at
// any point of the log.
func fanInFlight(history []events.Event, runID string) int {
	open, most := 0, 0
	for _, ev := range history {
		if ev.RunID != runID || !itemKey.MatchString(ev.StepKey) {
			continue
		}
		switch ev.Type {
		case events.StepStarted:
			open++
			most = max(most, open)
		case events.StepFinished:
			open--
		}
	}
	return most
}

// checkViews asks the engine for its runs view once it has applied the
// whole log, and checks that every submitted run is there and succeeded,
// and that the fan-out's run view holds each item's step. It returns how
// many runs it found successful.
func (w *workload) checkViews(ctx context.Context, t *testing.T, l *events.Log, last uint64) int {
	t.Helper()
	var runs []projector.RunView
	if err := l.Request(ctx, engine.EndpointRuns, engine.RunsQuery{MinSeq: last}, &runs); err != nil {
		t.Errorf("runs view: %v", err)
		return 0
	}
	ok := 0
	got := map[string]bool{}
	for _, r := range runs {
		got[r.ID] = true
		if !w.submitted(r.ID) {
			t.Errorf("the runs view holds run %s that nobody submitted", r.ID)
		} else if r.State != events.StateSuccess {
			t.Errorf("runs view: run %s is %s", r.ID, r.State)
		} else {
			ok++
		}
	}
	for _, req := range w.reqs {
		if !got[req.RunID] {
			t.Errorf("run %s is missing from the runs view", req.RunID)
		}
	}

	var fan projector.RunView
	if err := l.Request(ctx, engine.EndpointRun, engine.RunQuery{RunID: w.fanID, MinSeq: last}, &fan); err != nil {
		t.Errorf("fan-out run view: %v", err)
		return ok
	}
	items := 0
	for _, s := range fan.Steps {
		if itemKey.MatchString(s.Key) {
			items++
			if s.State != events.StateSuccess {
				t.Errorf("fan-out step %s is %s", s.Key, s.State)
			}
		}
	}
	if items != fanItems {
		t.Errorf("the fan-out run view has %d item steps, want %d", items, fanItems)
	}
	return ok
}

func parseJob(t *testing.T, file, yaml string) *assets.Job {
	t.Helper()
	job, err := assets.ParseJob(file, []byte(yaml), nil)
	if err != nil {
		t.Fatal(err)
	}
	return job
}

// setDurability rewrites the project's durability setting.
func setDurability(t *testing.T, p *testkit.Project, d string) {
	t.Helper()
	path := filepath.Join(p.Root, ".orbit", "config.yaml")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile(`(?m)^durability: .*$`)
	if !re.Match(data) {
		t.Fatalf("%s has no durability setting", path)
	}
	p.WriteFile(".orbit/config.yaml", string(re.ReplaceAll(data, []byte("durability: "+d))))
}

// pct returns the p-th percentile of sorted durations.
func pct(sorted []time.Duration, p int) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := min(len(sorted)-1, (len(sorted)*p+99)/100-1)
	return sorted[max(0, i)].Round(time.Millisecond)
}

// typeCounts lists the event types of the log with their counts, most
// frequent first.
func typeCounts(byType map[string]int) string {
	types := make([]string, 0, len(byType))
	for typ := range byType {
		types = append(types, typ)
	}
	slices.SortFunc(types, func(a, b string) int {
		if byType[a] != byType[b] {
			return byType[b] - byType[a]
		}
		return strings.Compare(a, b)
	})
	parts := make([]string, len(types))
	for i, typ := range types {
		parts[i] = fmt.Sprintf("%s %d", typ, byType[typ])
	}
	return strings.Join(parts, ", ")
}
