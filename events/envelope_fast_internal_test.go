package events

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestDecodeEnvelopeTakesWhatOrbitStores checks that the envelopes Append
// stores, of every kind of data, are decoded without json.Unmarshal, and as
// it would decode them.
func TestDecodeEnvelopeTakesWhatOrbitStores(t *testing.T) {
	t.Parallel()
	stored := []Event{
		{ID: "01J0000000000000000000000A", Type: RunStarted, Time: time.Date(2026, 11, 25, 10, 0, 0, 123456789, time.UTC), RunID: "R-1", Data: json.RawMessage(`{"engine":"e"}`)},
		{ID: "x", Type: StepFinished, Time: time.Now(), RunID: "R", Job: "build", StepKey: "a/1/b", ParentID: "p",
			Data: json.RawMessage(`{"attempt":1,"state":"success","output":{"text":"h\u00e9llo \u003c\"q\"\u003e","n":[1,2.5e3,null,true]}}`)},
		{ID: "t", Type: TaskCreated, Time: time.Date(2026, 1, 2, 3, 4, 5, 0, time.FixedZone("", 5*3600)), TaskID: "T-7", Data: json.RawMessage(`"plain"`)},
		{ID: "n", Type: RunQueued, RunID: "R"},
	}
	for _, ev := range stored {
		body, err := json.Marshal(ev)
		if err != nil {
			t.Fatal(err)
		}
		got, ok := decodeEnvelope(body)
		if !ok {
			t.Fatalf("not decoded without json.Unmarshal: %s", body)
		}
		checkLikeUnmarshal(t, body, got)
	}
}

// TestDecodeEnvelopeLeavesTheRestToUnmarshal checks that bodies outside the
// shape Orbit stores are left to json.Unmarshal, which decodes (or refuses)
// them as it always did.
func TestDecodeEnvelopeLeavesTheRestToUnmarshal(t *testing.T) {
	t.Parallel()
	for name, body := range map[string]string{
		"escaped string":    `{"id":"x\n","type":"run.started"}`,
		"key in other case": `{"ID":"x","type":"run.started"}`,
		"unknown key":       `{"id":"x","type":"run.started","extra":1}`,
		"duplicate key":     `{"id":"x","id":"y","type":"run.started"}`,
		"seq":               `{"id":"x","type":"run.started","seq":3}`,
		"data not last":     `{"id":"x","data":{},"type":"run.started"}`,
		"null data":         `{"id":"x","type":"run.started","data":null}`,
		"null string":       `{"id":null,"type":"run.started"}`,
		"bad data":          `{"id":"x","type":"run.started","data":{"a":}}`,
		"trailing data":     `{"id":"x","type":"run.started"} {}`,
		"trailing comma":    `{"id":"x","type":"run.started",}`,
		"bad time":          `{"id":"x","type":"run.started","time":"yesterday"}`,
		"invalid utf-8":     "{\"id\":\"x\xff\",\"type\":\"run.started\"}",
		"not an object":     `[1]`,
	} {
		if _, ok := decodeEnvelope([]byte(body)); ok {
			t.Errorf("%s: decoded without json.Unmarshal: %s", name, body)
		}
	}
}

// FuzzDecodeEnvelope checks that whatever decodeEnvelope decodes,
// json.Unmarshal accepts and decodes to the same Event. Its seeds are those
// of FuzzDecodeEvent, stored bodies of every event type and malformed ones.
//
//	go test -run='^$' -fuzz='^FuzzDecodeEnvelope$' -fuzztime=60s ./events/
func FuzzDecodeEnvelope(f *testing.F) {
	seeds, err := filepath.Glob("testdata/fuzz/FuzzDecodeEvent/*")
	if err != nil || len(seeds) == 0 {
		f.Fatalf("no seeds of FuzzDecodeEvent: %v", err)
	}
	for _, name := range seeds {
		raw, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		_, arg, _ := strings.Cut(strings.TrimSpace(string(raw)), "\n")
		quoted, ok := strings.CutPrefix(arg, "[]byte(")
		if !ok {
			f.Fatalf("%s: not a []byte seed", name)
		}
		body, err := strconv.Unquote(strings.TrimSuffix(quoted, ")"))
		if err != nil {
			f.Fatalf("%s: %v", name, err)
		}
		f.Add([]byte(body))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		if got, ok := decodeEnvelope(body); ok {
			checkLikeUnmarshal(t, body, got)
		}
	})
}

// checkLikeUnmarshal fails unless json.Unmarshal decodes body to got.
func checkLikeUnmarshal(t *testing.T, body []byte, got Event) {
	t.Helper()
	var want Event
	if err := json.Unmarshal(body, &want); err != nil {
		t.Fatalf("decoded what json.Unmarshal refuses (%v): %q", err, body)
	}
	if !reflect.DeepEqual(got, want) || !bytes.Equal(got.Data, want.Data) {
		t.Fatalf("decoded %q as\n%#v\njson.Unmarshal as\n%#v", body, got, want)
	}
}
