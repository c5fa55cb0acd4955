package projector

import (
	"errors"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/orbitrun/orbit/internal/testkit"
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
			evs := testkit.ReadEventsFile(b, history)
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
