package testkit

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/events"
)

// ReadEventsFile reads a recorded log, one event as JSON a line, in the
// file's order, each numbered by its line from 1.
func ReadEventsFile(t testing.TB, path string) []events.Event {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var evs []events.Event
	lines := bufio.NewScanner(f)
	lines.Buffer(nil, 1<<20)
	for lines.Scan() {
		var ev events.Event
		if err := json.Unmarshal(lines.Bytes(), &ev); err != nil {
			t.Fatalf("%s, line %d: %v", path, len(evs)+1, err)
		}
		ev.Seq = uint64(len(evs) + 1)
		evs = append(evs, ev)
	}
	if err := lines.Err(); err != nil {
		t.Fatalf("reading %s: %v", path, err)
	}
	return evs
}

// AppendRecorded appends a recorded event to l as it was recorded, its id
// and time included, and returns its sequence in l. Its payload is decoded
// keeping numbers as written (a float64 would round large integers before
// they reach the log). An event l holds already fails the test.
func AppendRecorded(ctx context.Context, t testing.TB, l *events.Log, ev events.Event) uint64 {
	t.Helper()
	payload, err := ev.Payload()
	if err != nil {
		t.Fatalf("event %s: %v", ev.ID, err)
	}
	dec := json.NewDecoder(bytes.NewReader(ev.Data))
	dec.UseNumber()
	if err := dec.Decode(payload); err != nil {
		t.Fatalf("event %s: %v", ev.ID, err)
	}
	ev.Seq = 0
	res, err := l.Append(ctx, ev, payload)
	if err != nil {
		t.Fatalf("appending event %s: %v", ev.ID, err)
	}
	if res.Duplicate {
		t.Fatalf("event %s: the log holds it already", ev.ID)
	}
	return res.Seq
}

// RenderBolt prints a DumpBolt of a views file as "bucket key value"
// lines in bucket and key order, keys quoted (index keys hold NULs),
// values as stored.
func RenderBolt(dump map[string]map[string]string) []byte {
	var b bytes.Buffer
	for _, name := range slices.Sorted(maps.Keys(dump)) {
		for _, k := range slices.Sorted(maps.Keys(dump[name])) {
			fmt.Fprintf(&b, "%s %q %s\n", name, k, dump[name][k])
		}
	}
	return b.Bytes()
}

// Golden compares got with the golden file at path, after writing got
// there when update is set (a test's -update flag).
func Golden(t testing.TB, path string, got []byte, update bool) {
	t.Helper()
	if update {
		require.NoError(t, os.WriteFile(path, got, 0o644))
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "run the test with -update to write it")
	assert.Equal(t, string(want), string(got), "%s: run the test with -update to rewrite it, and read the diff", path)
}
