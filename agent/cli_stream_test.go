package agent

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/events"
)

// recorder keeps what a stream records, in order: the event log's side of
// the Emitter edge.
type recorder struct {
	types    []string
	payloads []any
	blobs    int
}

func (r *recorder) Emit(_ context.Context, typ string, payload any) error {
	r.types, r.payloads = append(r.types, typ), append(r.payloads, payload)
	return nil
}

func (r *recorder) PutBlob(_ context.Context, data []byte) (events.BlobRef, error) {
	r.blobs++
	sum := sha256.Sum256(data)
	return events.BlobRef{Digest: "sha256-" + hex.EncodeToString(sum[:]), Size: int64(len(data))}, nil
}

// cliRecording reads a recorded CLI output of testdata/cli.
func cliRecording(t *testing.T, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "cli", name))
	require.NoError(t, err)
	return data
}

// feed gives s every line of data, trimmed, as RunCLI does line by line.
func feed(s cliStream, data []byte) {
	for _, line := range bytes.Split(data, []byte("\n")) {
		s.line(context.Background(), bytes.TrimSpace(line))
	}
}

// fuzzCLIStream fuzzes a CLI adapter's reader, seeded with each recording
// of testdata/cli that glob matches, whole and line by line, and with
// seeds. open returns a fresh reader that records into rec. Whatever the
// CLI prints, the reader must not panic, end in an error other than a
// *ProviderError or ErrTurnLimit, count a call it did not record, or
// record a payload that does not marshal.
func fuzzCLIStream(f *testing.F, glob string, seeds []string, open func(rec *recorder) cliStream) {
	files, _ := filepath.Glob(filepath.Join("testdata", "cli", glob))
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
		for _, line := range bytes.Split(data, []byte("\n")) {
			f.Add(line)
		}
	}
	for _, seed := range seeds {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		rec := &recorder{}
		s := open(rec)
		for _, line := range bytes.Split(data, []byte("\n")) {
			s.line(context.Background(), line)
		}
		out, err := s.outcome(context.Background(), "")
		var perr *ProviderError
		if err != nil && !errors.As(err, &perr) && !errors.Is(err, ErrTurnLimit) {
			t.Fatalf("outcome error %T: %v", err, err)
		}
		called := 0
		for _, typ := range rec.types {
			if typ == events.ToolCalled {
				called++
			}
		}
		if out.ToolCalls != called {
			t.Fatalf("%d tool calls counted, %d recorded", out.ToolCalls, called)
		}
		if _, err := json.Marshal(rec.payloads); err != nil {
			t.Fatalf("a payload that does not marshal: %v", err)
		}
	})
}
