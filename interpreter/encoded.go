package interpreter

import (
	"bytes"
	"encoding/json"
	"sync"

	"github.com/orbitrun/orbit/events"
)

// encodedOutputs keeps, by step instance key, a successful step's output
// as its step.finished holds it. A fan-in records the outputs of all its
// items and the run's run.finished the output of its last step: built
// from these bytes, such a payload is not encoded again from the decoded
// values (a 400-item fan-out of echo workers spent more CPU encoding its
// outputs' numbers than anything else of those two events).
//
// IMPORTANT: the bytes are those of the recorded output, which encodes
// to what the decoded value would (encoding/json writes numbers in their
// shortest form, which decodes and encodes again to itself, and map keys
// sorted), so what is recorded does not depend on which was used.
type encodedOutputs struct{ m sync.Map }

// put keeps key's output; an output the event leaves out is null.
func (e *encodedOutputs) put(key string, raw json.RawMessage) {
	if len(raw) == 0 {
		raw = json.RawMessage("null")
	}
	e.m.Store(key, raw)
}

func (e *encodedOutputs) get(key string) (json.RawMessage, bool) {
	v, ok := e.m.Load(key)
	if !ok {
		return nil, false
	}
	return v.(json.RawMessage), true
}

// list returns the encoding of a list of the outputs of keys, null where
// null[i], if every other one's output is known.
func (e *encodedOutputs) list(keys []string, null []bool) (json.RawMessage, bool) {
	if len(keys) == 0 {
		return nil, false
	}
	var buf bytes.Buffer
	buf.WriteByte('[')
	for i, key := range keys {
		if i > 0 {
			buf.WriteByte(',')
		}
		if null[i] {
			buf.WriteString("null")
			continue
		}
		raw, ok := e.get(key)
		if !ok {
			return nil, false
		}
		buf.Write(raw)
	}
	buf.WriteByte(']')
	return buf.Bytes(), true
}

// outcome decodes the step.finished event ev of the step instance key into
// an output or a failure, keeping a successful output's encoding.
func (x *Interpreter) outcome(key string, ev events.Event) (any, *events.ErrorInfo) {
	out, raw, failed := stepOutcomeEncoded(ev)
	if failed == nil {
		x.encoded.put(key, raw)
	}
	return out, failed
}

// stepOutcomeEncoded decodes a step.finished event into an output or a
// failure, and returns a successful output as the event holds it too.
func stepOutcomeEncoded(ev events.Event) (any, json.RawMessage, *events.ErrorInfo) {
	var d struct {
		State  string            `json:"state"`
		Output json.RawMessage   `json:"output"`
		Error  *events.ErrorInfo `json:"error"`
	}
	if err := ev.Decode(&d); err != nil {
		return nil, nil, &events.ErrorInfo{Kind: events.KindInternal, Message: err.Error(), StepKey: ev.StepKey}
	}
	if d.State != events.StateSuccess {
		if d.Error == nil {
			d.Error = &events.ErrorInfo{Kind: events.KindActivity, Message: "step " + d.State}
		}
		if d.Error.StepKey == "" {
			d.Error.StepKey = ev.StepKey
		}
		return nil, nil, d.Error
	}
	var out any
	if len(d.Output) > 0 {
		if err := json.Unmarshal(d.Output, &out); err != nil {
			return nil, nil, &events.ErrorInfo{Kind: events.KindInternal, Message: err.Error(), StepKey: ev.StepKey}
		}
	}
	return out, d.Output, nil
}
