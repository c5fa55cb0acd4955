package projector_test

import (
	"flag"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/internal/testkit"
	"github.com/orbitrun/orbit/projector"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// Recorded histories fold to the views in their golden files, byte for
// byte. A failure here after a change to a fold or an encoding means the
// stored format changed: bump the view's version (so existing files
// rebuild) and refresh the goldens with -update.
func TestRecordedHistoriesFoldToTheirGoldenViews(t *testing.T) {
	t.Parallel()
	histories, err := filepath.Glob("testdata/history_*.jsonl")
	require.NoError(t, err)
	require.NotEmpty(t, histories)
	for _, history := range histories {
		t.Run(filepath.Base(history), func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			last := appendHistory(t, e, history)
			p := e.open(projector.Config{BatchSize: 5})
			e.runThrough(p, last)

			live := testkit.DumpBolt(t, e.path)
			assert.Equal(t, e.rebuild(last), live, "live and rebuilt views differ")
			// The log bucket says which log the views were folded from (a
			// creation time that differs from test to test), not what it
			// folds to.
			delete(live, "log")
			testkit.Golden(t, strings.TrimSuffix(history, ".jsonl")+".golden", testkit.RenderBolt(live), *update)
		})
	}
}

// appendHistory appends the events of a JSON-lines file, ids and times
// included, and returns the last sequence.
func appendHistory(t *testing.T, e *env, path string) uint64 {
	t.Helper()
	var last uint64
	for _, ev := range testkit.ReadEventsFile(t, path) {
		last = testkit.AppendRecorded(e.ctx, t, e.log, ev)
	}
	return last
}
