package events

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
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
	ctx := testContext(t)
	l := openLog(t, DurabilityRelaxed)
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
	sameJSON(t, whole, data, "the expanded payload differs from the original")
	// One blob, stored and read once, is a handful of messages; once per
	// copy would be hundreds.
	if stored > 20 || read > 20 {
		t.Errorf("storing the moved values took %d messages to the server and reading them %d; want one blob's worth each", stored, read)
	}
}

// TestSitesAreTheValuesAsEncoded checks the sites scanSites lists: each
// is one whole value of the document as written, at least minBlobValue
// long, inside its parent and listed after it; and every value that long
// is listed. Documents with escapes, numbers as written, white space,
// empty containers and nulls.
func TestSitesAreTheValuesAsEncoded(t *testing.T) {
	t.Parallel()
	big := strings.Repeat("é<&>\"\\\n{\"$blob\"", 200)
	docs := map[string]string{
		"escapes": `{"a<b": "` + strings.ReplaceAll(strings.ReplaceAll(strings.ReplaceAll(big, `\`, `\\`), `"`, `\"`), "\n", `\n`) + `", "n": 1.50e3}`,
		"nested":  `{"x": [{"k": [1, 2.0, -3e-7, null, true, {}, []], "s": "` + strings.Repeat("y", 1500) + `"}, {"t": {"u": {"v": "` + strings.Repeat("z", 3000) + `"}}}]}`,
		"list":    "[\n" + strings.Repeat(`{"items": [`+strings.Repeat("12345, ", 200)+`0], "item": "`+strings.Repeat("a", 300)+`"},`, 20) + "null ]",
	}
	for name, text := range docs {
		t.Run(name, func(t *testing.T) {
			data := []byte(text)
			if !json.Valid(data) {
				t.Fatal("the test's document is not JSON")
			}
			sites, err := scanSites(data)
			if err != nil {
				t.Fatal(err)
			}
			if len(sites) == 0 {
				t.Fatal("no site listed")
			}
			if want := countLarge(t, data); len(sites) != want {
				t.Errorf("%d sites listed, want %d", len(sites), want)
			}
			seen := map[*valueSite]bool{}
			for i, s := range sites {
				if !json.Valid(data[s.start:s.end]) {
					t.Errorf("site %d: %q is not a value", i, preview(data[s.start:s.end]))
				}
				if s.size != s.end-s.start || s.size < minBlobValue {
					t.Errorf("site %d: size %d for %d bytes", i, s.size, s.end-s.start)
				}
				if p := s.parent; p != nil && (!seen[p] || s.start < p.start || s.end > p.end) {
					t.Errorf("site %d is listed before its parent or lies outside it", i)
				}
				seen[s] = true
			}
		})
	}
}

// countLarge counts the values under the document (not the document
// itself) whose text is at least minBlobValue bytes long, by decoding:
// each value's text is found as the decoder's input offsets around it.
func countLarge(t *testing.T, data []byte) int {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(data))
	n := 0
	var walk func(top bool)
	walk = func(top bool) {
		// The value starts at the first byte that is not space or a
		// separator after the offset before its first token.
		start := int(dec.InputOffset())
		for start < len(data) && strings.IndexByte(" \t\r\n,:", data[start]) >= 0 {
			start++
		}
		tok, err := dec.Token()
		if err != nil {
			t.Fatal(err)
		}
		if d, ok := tok.(json.Delim); ok && (d == '{' || d == '[') {
			for dec.More() {
				if d == '{' {
					if _, err := dec.Token(); err != nil { // the key
						t.Fatal(err)
					}
				}
				walk(false)
			}
			if _, err := dec.Token(); err != nil { // the close
				t.Fatal(err)
			}
		}
		if !top && int(dec.InputOffset())-start >= minBlobValue {
			n++
		}
	}
	walk(true)
	return n
}

// FuzzScanSites: whatever a JSON document holds, the scanner accepts it,
// and every site it lists is one whole value of it.
func FuzzScanSites(f *testing.F) {
	f.Add([]byte(`{"a":[1,2,3],"b":"x"}`))
	f.Add([]byte(`[` + strings.Repeat(`"`+strings.Repeat("q", 600)+`",`, 4) + `{"$blob":"sha256-x","preview":"[1","size":2}]`))
	f.Add([]byte(`{"s":"\"{\\\"$blob\\\":1}","k":{"` + strings.Repeat("w", 1100) + `":null}}`))
	f.Add([]byte(` [ {} , [ ] , "" , -0.5e+7 ] `))
	f.Add([]byte(`{"a":`))
	f.Fuzz(func(t *testing.T, data []byte) {
		sites, err := scanSites(data)
		if !json.Valid(data) {
			return
		}
		if err != nil {
			t.Fatalf("a JSON document refused: %v", err)
		}
		for _, s := range sites {
			if !json.Valid(data[s.start:s.end]) {
				t.Fatalf("a site that is not a value: %q", data[s.start:s.end])
			}
			if end, err := valueEnd(data, s.start); err != nil || end != s.end {
				t.Fatalf("a site that is not a whole value: ends at %d, value at %d (%v)", s.end, end, err)
			}
		}
	})
}

// TestExpandSplicesOnlyReferences shrinks a document holding what looks
// like references — the text of one inside a string, an object with a
// "$blob" key and more, a "$blob" string value — with large values, and
// checks that it expands back to the same value.
func TestExpandSplicesOnlyReferences(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	l := openLog(t, DurabilityRelaxed)
	decoys := []any{
		`{"$blob":"sha256-0","preview":"","size":0}`,
		map[string]any{"$blob": "sha256-0", "preview": "", "size": 0, "more": true},
		map[string]any{"$blob": 7, "preview": "", "size": 0},
		[]any{"$blob", "size", "preview"},
	}
	parts := make([]any, 0, 40)
	for i := range 40 {
		parts = append(parts, map[string]any{
			"n":      i,
			"decoys": decoys,
			"text":   strings.Repeat(string(rune('a'+i%26)), 20_000),
			"inner":  map[string]any{"list": strings.Split(strings.Repeat("x ", 3000), " ")},
		})
	}
	data, err := json.Marshal(map[string]any{"parts": parts, "decoys": decoys})
	if err != nil {
		t.Fatal(err)
	}
	small, err := l.shrink(ctx, data)
	if err != nil {
		t.Fatal(err)
	}
	if len(small) > inlineBudget {
		t.Fatalf("shrink left %d bytes", len(small))
	}
	whole, err := l.expand(ctx, small)
	if err != nil {
		t.Fatal(err)
	}
	sameJSON(t, whole, data, "the expanded document differs from the original")
}

// sameJSON fails the test with msg unless got and want are the same JSON
// value.
func sameJSON(t *testing.T, got, want []byte, msg string) {
	t.Helper()
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(want, &w); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(g, w) {
		t.Error(msg)
	}
}
