package engine

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/oklog/ulid/v2"

	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/tracing"
)

// FuzzDecodeSubmission: whatever a client sends to runs.submit, the
// decoder either refuses it as an invalid request or returns a request
// with a ULID run id, no parent, parent event or depth, and an object
// input or none — never a child run, never a panic.
func FuzzDecodeSubmission(f *testing.F) {
	job := `{"name":"j","spec":{"steps":[{"id":"x","activity":{"type":"deterministic","action":"echo","config":{"text":"hi"}}}]}}`
	for _, seed := range []string{
		``,
		`{}`,
		`null`,
		`[]`,
		`{"job":` + job + `}`,
		`{"run_id":"01JD0000000000000000000000","job":` + job + `}`,
		`{"run_id":"../x","job":` + job + `}`,
		`{"run_id":"01JD0000000000000000000000","job":` + job + `,"parent":{"run_id":"R"}}`,
		`{"run_id":"01JD0000000000000000000000","job":` + job + `,"depth":-1}`,
		`{"run_id":"01JD0000000000000000000000","job":` + job + `,"parent_event":"e"}`,
		`{"run_id":"01JD0000000000000000000000","job":{"name":"off","spec":{"state":"disabled"}}}`,
		`{"run_id":"01JD0000000000000000000000","job":{"spec":{"steps":[{"id":"x"}]}}}`,
		`{"run_id":7}`,
		`{"job":` + job + `,"input":[1]}`,
		`{"job":` + job + `,"input":42}`,
		`{"job":` + job + `,"input":{"a":1}}`,
		`{"job":` + job + `,"traceparent":"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}`,
		`{"job":` + job + `,"traceparent":"01-nonsense"}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		req, minted, err := decodeSubmission(json.RawMessage(raw))
		if err != nil {
			if !errors.Is(err, events.ErrInvalidRequest) {
				t.Fatalf("%q: %v is not an invalid request", raw, err)
			}
			return
		}
		// Only an id the client did not give is minted: the API looks
		// up every other one in the log.
		var given struct {
			RunID string `json:"run_id"`
		}
		_ = json.Unmarshal(raw, &given) // an empty request is no JSON, and has no id
		if minted != (given.RunID == "") {
			t.Fatalf("%q: minted %v, run_id %q", raw, minted, given.RunID)
		}
		if _, err := ulid.ParseStrict(req.RunID); err != nil {
			t.Fatalf("%q: run id %q accepted: %v", raw, req.RunID, err)
		}
		if req.Parent != nil || req.ParentEvent != "" || req.Depth != 0 {
			t.Fatalf("%q: a child run accepted: %+v", raw, req)
		}
		if _, ok := req.Input.(map[string]any); !ok && req.Input != nil {
			t.Fatalf("%q: an input that is not an object accepted: %v", raw, req.Input)
		}
		if _, err := tracing.ParseTraceparent(req.Traceparent); req.Traceparent != "" && err != nil {
			t.Fatalf("%q: traceparent %q accepted: %v", raw, req.Traceparent, err)
		}
	})
}

// TestTheAPITakesACallersTraceparent: a submission's traceparent is kept
// for the run's trace to continue; one that is not a W3C traceparent is an
// invalid request, whatever client sent it.
func TestTheAPITakesACallersTraceparent(t *testing.T) {
	job := `{"name":"j","spec":{"steps":[{"id":"x","activity":{"type":"deterministic","action":"echo","config":{"text":"hi"}}}]}}`
	const caller = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	req, _, err := decodeSubmission(json.RawMessage(`{"job":` + job + `,"traceparent":"` + caller + `"}`))
	if err != nil || req.Traceparent != caller {
		t.Fatalf("a valid traceparent: %v, kept %q", err, req.Traceparent)
	}
	_, _, err = decodeSubmission(json.RawMessage(`{"job":` + job + `,"traceparent":"00-0af7651916cd43dd8448eb211c80319c-b7ad6b71692033-01"}`))
	if !errors.Is(err, events.ErrInvalidRequest) || !strings.Contains(err.Error(), "traceparent") {
		t.Fatalf("a traceparent with a short span id: %v, want an invalid request naming it", err)
	}
}
