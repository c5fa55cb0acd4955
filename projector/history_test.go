package projector_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/events"
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
			stop := e.start(p)
			require.NoError(t, p.WaitFor(e.ctx, last))
			require.NoError(t, stop())
			require.NoError(t, p.Close())

			live := testkit.DumpBolt(t, e.path)
			assert.Equal(t, e.rebuild(last), live, "live and rebuilt views differ")
			// The log bucket says which log the views were folded from (a
			// creation time that differs from test to test), not what it
			// folds to.
			delete(live, "log")
			got := renderDump(live)
			golden := strings.TrimSuffix(history, ".jsonl") + ".golden"
			if *update {
				require.NoError(t, os.WriteFile(golden, got, 0o644))
			}
			want, err := os.ReadFile(golden)
			require.NoError(t, err, "run with -update to create the golden file")
			assert.Equal(t, string(want), string(got))
		})
	}
}

// appendHistory appends the events of a JSON-lines file, ids and times
// included, and returns the last sequence.
func appendHistory(t *testing.T, e *env, path string) uint64 {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	var last uint64
	lines := bufio.NewScanner(f)
	lines.Buffer(nil, 1<<20)
	for lines.Scan() {
		var ev events.Event
		require.NoError(t, json.Unmarshal(lines.Bytes(), &ev))
		payload, err := ev.Payload()
		require.NoError(t, err)
		// Decode again keeping numbers as written: a float64 would round
		// large integers before they reach the log.
		dec := json.NewDecoder(bytes.NewReader(ev.Data))
		dec.UseNumber()
		require.NoError(t, dec.Decode(payload))
		res, err := e.log.Append(e.ctx, ev, payload)
		require.NoError(t, err)
		require.False(t, res.Duplicate, ev.ID)
		last = res.Seq
	}
	require.NoError(t, lines.Err())
	return last
}

// renderDump prints a views file as "bucket key value" lines in bucket and
// key order, keys quoted (index keys hold NULs), values as stored.
func renderDump(dump map[string]map[string]string) []byte {
	var b bytes.Buffer
	buckets := make([]string, 0, len(dump))
	for name := range dump {
		buckets = append(buckets, name)
	}
	slices.Sort(buckets)
	for _, name := range buckets {
		keys := make([]string, 0, len(dump[name]))
		for k := range dump[name] {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			fmt.Fprintf(&b, "%s %q %s\n", name, k, dump[name][k])
		}
	}
	return b.Bytes()
}
