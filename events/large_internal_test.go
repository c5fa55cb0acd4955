package events

import (
	"context"
	"encoding/json"
	"path/filepath"
	"reflect"
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
