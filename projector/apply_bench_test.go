package projector

import (
	"bufio"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/orbitrun/orbit/events"
)

// BenchmarkApplyBatch measures folding each recorded history of testdata
// into empty views, in one batch as a rebuild would: the decoding of the
// events' data and every view's fold and writes. Each batch is aborted
// just before its commit, which leaves the views empty for the next one
// and keeps the file's I/O, which the folds do not change, out of the
// measurement.
func BenchmarkApplyBatch(b *testing.B) {
	histories, err := filepath.Glob("testdata/history_*.jsonl")
	if err != nil || len(histories) == 0 {
		b.Fatalf("no recorded histories: %v", err)
	}
	discard := slog.New(slog.DiscardHandler)
	errAborted := errors.New("aborted before the commit")
	abort := func(uint64) error { return errAborted }
	for _, history := range histories {
		name := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(history), "history_"), ".jsonl")
		b.Run(name, func(b *testing.B) {
			evs := readHistory(b, history)
			db, err := openDB(filepath.Join(b.TempDir(), "views.db"), time.Second, true)
			if err != nil {
				b.Fatal(err)
			}
			defer db.Close()
			if err := db.Update(initViews); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			defer reportCPU(b)()
			for b.Loop() {
				if _, _, err := applyBatch(db, discard, evs, abort); !errors.Is(err, errAborted) {
					b.Fatalf("applying the history: %v", err)
				}
			}
		})
	}
}

// readHistory reads a JSON-lines history and numbers its events from 1,
// as the log would.
func readHistory(tb testing.TB, path string) []events.Event {
	tb.Helper()
	f, err := os.Open(path)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	var evs []events.Event
	lines := bufio.NewScanner(f)
	lines.Buffer(nil, 1<<20)
	for lines.Scan() {
		var ev events.Event
		if err := json.Unmarshal(lines.Bytes(), &ev); err != nil {
			tb.Fatal(err)
		}
		ev.Seq = uint64(len(evs) + 1)
		evs = append(evs, ev)
	}
	if err := lines.Err(); err != nil {
		tb.Fatal(err)
	}
	return evs
}
