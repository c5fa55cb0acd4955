package projector

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/orbitrun/orbit/events"
)

// BenchmarkOpenCheck measures what Open's check costs on a sound views file
// of 10,000 runs (two shell steps each, an agent turn for one in five):
// all of Open, and each part of the check alone.
func BenchmarkOpenCheck(b *testing.B) {
	path := filepath.Join(b.TempDir(), "views.db")
	buildRuns(b, path, 10_000)
	info, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("views file of 10,000 runs: %.1f MB", float64(info.Size())/1e6)
	discard := slog.New(slog.DiscardHandler)

	b.Run("Open", func(b *testing.B) {
		defer reportCPU(b)()
		for b.Loop() {
			db, err := openViews(path, time.Second, discard)
			if err != nil {
				b.Fatal(err)
			}
			_ = db.Close()
		}
	})
	db, err := openDB(path, time.Second, false)
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	file, err := os.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer file.Close()
	parts := []struct {
		name string
		fn   func(tx *bolt.Tx) error
	}{
		{"page headers and tree", func(tx *bolt.Tx) error {
			heads, err := checkPageHeaders(tx)
			if err != nil {
				return err
			}
			return checkTree(tx, file, heads)
		}},
		{"walk keys", func(tx *bolt.Tx) error { return walkKeys(tx.Cursor(), "the root bucket") }},
		{"decode records", checkRecords},
		{"tx.Check", checkPages},
	}
	for _, part := range parts {
		b.Run(part.name, func(b *testing.B) {
			defer reportCPU(b)()
			for b.Loop() {
				if err := db.View(part.fn); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// reportCPU reports the process's CPU time per operation, which, unlike
// the time per operation, other processes on the machine barely change.
// Call the function it returns when the loop is done.
func reportCPU(b *testing.B) func() {
	start := cpuTime(b)
	return func() {
		b.ReportMetric(float64((cpuTime(b)-start).Milliseconds())/float64(b.N), "cpu-ms/op")
	}
}

func cpuTime(b *testing.B) time.Duration {
	var u syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &u); err != nil {
		b.Fatal(err)
	}
	return time.Duration(u.Utime.Nano() + u.Stime.Nano())
}

// buildRuns folds the events of n runs into a new views file at path.
func buildRuns(tb testing.TB, path string, n int) {
	tb.Helper()
	db, err := openDB(path, time.Second, true)
	if err != nil {
		tb.Fatal(err)
	}
	defer db.Close()
	if err := db.Update(initViews); err != nil {
		tb.Fatal(err)
	}
	discard := slog.New(slog.DiscardHandler)
	at := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	var (
		seq   uint64
		batch []events.Event
	)
	add := func(ev events.Event, payload any) {
		data, err := json.Marshal(payload)
		if err != nil {
			tb.Fatal(err)
		}
		seq++
		at = at.Add(time.Second)
		ev.Seq, ev.ID, ev.Time, ev.Data = seq, fmt.Sprintf("ev-%d", seq), at, data
		batch = append(batch, ev)
		if len(batch) == rebuildBatchSize {
			if _, _, err := applyBatch(db, discard, batch, nil); err != nil {
				tb.Fatal(err)
			}
			batch = nil
		}
	}
	for i := range n {
		id, job := fmt.Sprintf("01JBENCH%018d", i), fmt.Sprintf("job-%d", i%5)
		run := events.Event{RunID: id, Job: job}
		with := func(typ, step string) events.Event {
			ev := run
			ev.Type, ev.StepKey = typ, step
			return ev
		}
		add(with(events.RunRequested, ""), events.RunRequestedData{JobName: job, Requester: "bench",
			Input: map[string]any{"ref": "main", "n": i}})
		add(with(events.RunStarted, ""), events.RunStartedData{Engine: "engine-a"})
		for _, step := range []string{"build", "test"} {
			add(with(events.StepStarted, step), events.StepStartedData{Attempt: 1, ActivityType: "shell",
				Target: "activity:" + step, Input: map[string]any{"target": "./..."}})
			add(with(events.ActivityStarted, step), events.ActivityStartedData{Attempt: 1, ActivityType: "shell", Worker: "w1", Delivery: 1})
			add(with(events.ShellExited, step), events.ShellExitedData{Attempt: 1, Program: "go", ExitCode: 0})
			add(with(events.StepFinished, step), events.StepFinishedData{Attempt: 1, State: events.StateSuccess,
				DurationMS: 1500, Output: map[string]any{"exit_code": 0, "summary": "ok " + step}})
		}
		if i%5 == 0 {
			add(with(events.AgentTurn, "test"), events.AgentTurnData{Turn: 1, Provider: "anthropic",
				Model: "claude-sonnet-4-5", StopReason: "end_turn", Usage: events.TokenUsage{InputTokens: 1000, OutputTokens: 80}})
		}
		add(with(events.RunFinished, ""), events.RunFinishedData{State: events.StateSuccess, DurationMS: 20000,
			Output: map[string]any{"artifacts": []any{"bin/app"}}})
	}
	if len(batch) > 0 {
		if _, _, err := applyBatch(db, discard, batch, nil); err != nil {
			tb.Fatal(err)
		}
	}
}
