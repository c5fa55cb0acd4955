package events_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/events"
)

func TestDecodeEventRejectsWhatIsNotAnEvent(t *testing.T) {
	t.Parallel()
	for name, body := range map[string]string{
		"not json":      `{"id":`,
		"no id":         `{"type":"run.started"}`,
		"unknown type":  `{"id":"x","type":"run.exploded"}`,
		"trailing data": `{"id":"x","type":"run.started"} {}`,
		"wrong shape":   `[1,2,3]`,
	} {
		_, err := events.DecodeEvent([]byte(body))
		assert.Error(t, err, name)
	}
	ev, err := events.DecodeEvent([]byte(`{"id":"x","type":"run.started","run_id":"R","data":{"engine":"e"},"seq":99}`))
	require.NoError(t, err)
	assert.Zero(t, ev.Seq, "a stored seq field is not trusted")
	p, err := ev.Payload()
	require.NoError(t, err)
	assert.Equal(t, "e", p.(*events.RunStartedData).Engine)
}

// FuzzDecodeEvent checks that DecodeEvent never panics, that every rejection
// says something and matches ErrInvalidEvent or ErrUnknownType, and that an
// accepted envelope keeps its promises: Payload and Subject answer without
// panicking, and the event survives being stored again. The seed corpus in
// testdata/fuzz/FuzzDecodeEvent holds stored bodies of every event type the
// example jobs and the Groundhog demo publish, and malformed ones.
//
//	go test -run='^$' -fuzz='^FuzzDecodeEvent$' -fuzztime=60s ./events/
func FuzzDecodeEvent(f *testing.F) {
	f.Add([]byte(`{"id":"x","type":"step.finished","run_id":"R","step_key":"a/1/b","data":{"attempt":1,"state":"success","output":{"a":[1,2]}}}`))
	f.Add([]byte(`{"id":"x","type":"run.requested","data":{"job":{"name":"j"},"input":null}}`))
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, body []byte) {
		ev, err := events.DecodeEvent(body)
		if err != nil {
			checkDecodeError(t, err)
			return
		}
		if !json.Valid(body) {
			t.Fatalf("accepted a body that is not one JSON value: %q", body)
		}
		if ev.ID == "" || ev.Seq != 0 {
			t.Fatalf("accepted an event with id %q, seq %d", ev.ID, ev.Seq)
		}
		info, ok := events.Lookup(ev.Type)
		if !ok {
			t.Fatalf("accepted unknown type %q", ev.Type)
		}
		payload, perr := ev.Payload()
		if perr != nil {
			checkDecodeError(t, perr)
		} else if payload == nil {
			t.Fatal("Payload returned neither a value nor an error")
		}
		checkSubject(t, ev, info)

		// Publishing stores json.Marshal of the envelope: what was decoded
		// must be stored and decoded again unchanged, and the second encoding
		// must be the first one byte for byte.
		stored, err := json.Marshal(ev)
		if err != nil {
			t.Fatalf("accepted event does not encode: %v", err)
		}
		again, err := events.DecodeEvent(stored)
		if err != nil {
			t.Fatalf("stored event does not decode: %v\n%s", err, stored)
		}
		if !sameEnvelope(ev, again) {
			t.Fatalf("envelope changed when stored again:\n%+v\n%+v", ev, again)
		}
		if restored, err := json.Marshal(again); err != nil || !bytes.Equal(stored, restored) {
			t.Fatalf("second encoding differs (%v):\n%s\n%s", err, stored, restored)
		}
		payload2, perr2 := again.Payload()
		if (perr == nil) != (perr2 == nil) {
			t.Fatalf("payload error changed when stored again: %v, then %v", perr, perr2)
		}
		if perr == nil {
			p1, err1 := json.Marshal(payload)
			p2, err2 := json.Marshal(payload2)
			if err1 != nil || err2 != nil || !bytes.Equal(p1, p2) {
				t.Fatalf("payload changed when stored again (%v, %v):\n%s\n%s", err1, err2, p1, p2)
			}
		}
	})
}

// checkDecodeError fails unless err says something and matches one of the
// sentinels DecodeEvent and Payload promise.
func checkDecodeError(t *testing.T, err error) {
	t.Helper()
	if err.Error() == "" {
		t.Fatal("empty error message")
	}
	if !errors.Is(err, events.ErrInvalidEvent) && !errors.Is(err, events.ErrUnknownType) {
		t.Fatalf("error matches neither ErrInvalidEvent nor ErrUnknownType: %v", err)
	}
}

// checkSubject fails unless Subject either refuses with a message or names
// the event's aggregate, one clean id token and its type.
func checkSubject(t *testing.T, ev events.Event, info events.TypeInfo) {
	t.Helper()
	subject, err := ev.Subject()
	if err != nil {
		checkDecodeError(t, err)
		return
	}
	prefix := events.EventsRoot + "." + info.Aggregate + "."
	id, ok := strings.CutPrefix(subject, prefix)
	if ok {
		id, ok = strings.CutSuffix(id, "."+ev.Type)
	}
	if !ok || events.Token(id) != id {
		t.Fatalf("subject %q is not %s<one token>.%s", subject, prefix, ev.Type)
	}
}

// sameEnvelope compares two decoded envelopes: times as instants, data as
// the JSON it holds (storing compacts it and escapes HTML characters).
func sameEnvelope(a, b events.Event) bool {
	return a.ID == b.ID && a.Type == b.Type && a.Time.Equal(b.Time) &&
		a.RunID == b.RunID && a.TaskID == b.TaskID && a.Job == b.Job &&
		a.StepKey == b.StepKey && a.ParentID == b.ParentID &&
		bytes.Equal(compactJSON(a.Data), compactJSON(b.Data))
}

func compactJSON(raw json.RawMessage) []byte {
	if raw == nil {
		return nil
	}
	out, err := json.Marshal(raw)
	if err != nil {
		return raw
	}
	return out
}

// TestInterruptedDecodesBeforeAndAfterAbandon: the abandon fields of
// groundhog.interrupted are additive. An event recorded before them decodes
// with none set; one recorded by an abandon keeps them.
func TestInterruptedDecodesBeforeAndAfterAbandon(t *testing.T) {
	t.Parallel()
	old, err := events.DecodeEvent([]byte(`{"id":"x","type":"groundhog.interrupted","task_id":"T-1","data":{"checkpoint":"c","attempt":1,"day":1,"run_id":"R"}}`))
	require.NoError(t, err)
	p, err := old.Payload()
	require.NoError(t, err)
	assert.Equal(t, &events.GroundhogInterruptedData{Attempt: events.Attempt{Checkpoint: "c", Attempt: 1, Day: 1}, RunID: "R"}, p)

	ev, err := events.DecodeEvent([]byte(`{"id":"y","type":"groundhog.interrupted","task_id":"T-1","data":{"checkpoint":"c","attempt":1,"day":1,"run_id":"","abandoned_by":"cli:ann@box","reason":"stuck","workspace_kept":true}}`))
	require.NoError(t, err)
	p, err = ev.Payload()
	require.NoError(t, err)
	d := p.(*events.GroundhogInterruptedData)
	assert.Equal(t, "cli:ann@box", d.AbandonedBy)
	assert.Equal(t, "stuck", d.Reason)
	assert.True(t, d.WorkspaceKept)
}
