package events

import (
	"context"
	"encoding/json"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// serverMsgs returns how many messages the embedded server has received
// from its clients: every blob stored or read costs several (API requests,
// chunks, acknowledgements).
func serverMsgs(t *testing.T, l *Log) int64 {
	t.Helper()
	v, err := l.srv.Varz(nil)
	if err != nil {
		t.Fatal(err)
	}
	return v.InMsgs
}

// TestRepeatedLargeValuesAreStoredAndReadOnce shrinks and expands a
// payload whose many large values are equal — a fan-in's outputs, each
// carrying the same input — and checks that the value went to and came
// from the blob store once, not once per copy, and that the payload came
// back whole.
func TestRepeatedLargeValuesAreStoredAndReadOnce(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	l, err := Open(ctx, Config{StoreDir: filepath.Join(t.TempDir(), "nats"), Redactor: &Redactor{}, Durability: DurabilityRelaxed})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	const copies = 400
	shared := make([]int, copies)
	for i := range shared {
		shared[i] = i
	}
	outputs := make([]map[string]any, copies)
	for i := range outputs {
		outputs[i] = map[string]any{"item": i, "items": shared}
	}
	data, err := json.Marshal(map[string]any{"outputs": outputs})
	if err != nil {
		t.Fatal(err)
	}
	if len(data) <= inlineBudget {
		t.Fatalf("the payload is %d bytes, within the inline budget", len(data))
	}

	before := serverMsgs(t, l)
	small, err := l.shrink(ctx, data)
	if err != nil {
		t.Fatal(err)
	}
	stored := serverMsgs(t, l) - before
	if len(small) > inlineBudget || !hasBlobRefs(small) {
		t.Fatalf("shrink left %d bytes, refs: %v", len(small), hasBlobRefs(small))
	}

	before = serverMsgs(t, l)
	whole, err := l.expand(ctx, small)
	if err != nil {
		t.Fatal(err)
	}
	read := serverMsgs(t, l) - before
	var got, want any
	if err := json.Unmarshal(whole, &got); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &want); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Error("the expanded payload differs from the original")
	}
	// One blob, stored and read once, is a handful of messages; once per
	// copy would be hundreds.
	if stored > 20 || read > 20 {
		t.Errorf("storing the moved values took %d messages to the server and reading them %d; want one blob's worth each", stored, read)
	}
}

// TestSiteSizesAreTheEncodedLengths checks the lengths collectSites sums
// from the leaves up against encoding each listed value whole, and that
// every site comes after its parent, on documents with escapes, numbers
// as written, empty containers and nulls.
func TestSiteSizesAreTheEncodedLengths(t *testing.T) {
	t.Parallel()
	big := strings.Repeat("é<&>\"\\\n", 200)
	docs := map[string]string{
		"escapes": `{"a<b": "` + strings.ReplaceAll(strings.ReplaceAll(strings.ReplaceAll(big, `\`, `\\`), `"`, `\"`), "\n", `\n`) + `", "n": 1.50e3}`,
		"nested":  `{"x": [{"k": [1, 2.0, -3e-7, null, true, {}, []], "s": "` + strings.Repeat("y", 1500) + `"}, {"t": {"u": {"v": "` + strings.Repeat("z", 3000) + `"}}}]}`,
		"list":    `[` + strings.Repeat(`{"items": [0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31,32,33,34,35,36,37,38,39,40,41,42,43,44,45,46,47,48,49,50,51,52,53,54,55,56,57,58,59,60,61,62,63,64,65,66,67,68,69,70,71,72,73,74,75,76,77,78,79,80,81,82,83,84,85,86,87,88,89,90,91,92,93,94,95,96,97,98,99,100,101,102,103,104,105,106,107,108,109,110,111,112,113,114,115,116,117,118,119,120,121,122,123,124,125,126,127,128,129,130,131,132,133,134,135,136,137,138,139,140,141,142,143,144,145,146,147,148,149,150,151,152,153,154,155,156,157,158,159,160,161,162,163,164,165,166,167,168,169,170,171,172,173,174,175,176,177,178,179,180,181,182,183,184,185,186,187,188,189,190,191,192,193,194,195,196,197,198,199,200,201,202,203,204,205,206,207,208,209,210,211,212,213,214,215,216,217,218,219,220,221,222,223,224,225,226,227,228,229,230,231,232,233,234,235,236,237,238,239,240,241,242,243,244,245,246,247,248,249,250], "item": "`+strings.Repeat("a", 300)+`"},`, 20) + `null]`,
	}
	for name, text := range docs {
		t.Run(name, func(t *testing.T) {
			doc, err := decodeJSON([]byte(text))
			if err != nil {
				t.Fatal(err)
			}
			whole, err := json.Marshal(doc)
			if err != nil {
				t.Fatal(err)
			}
			var sites []*valueSite
			if got := collectSites(doc, nil, &sites); got != len(whole) {
				t.Errorf("document: summed %d, encoded %d", got, len(whole))
			}
			if len(sites) == 0 {
				t.Fatal("no site listed")
			}
			seen := map[*valueSite]bool{}
			for i, s := range sites {
				enc, err := json.Marshal(s.value)
				if err != nil {
					t.Fatal(err)
				}
				if s.size != len(enc) {
					t.Errorf("site %d: summed %d, encoded %d", i, s.size, len(enc))
				}
				if s.size < minBlobValue {
					t.Errorf("site %d: %d bytes, under the minimum", i, s.size)
				}
				if s.parent != nil && !seen[s.parent] {
					t.Errorf("site %d comes before its parent", i)
				}
				seen[s] = true
			}
		})
	}
}
