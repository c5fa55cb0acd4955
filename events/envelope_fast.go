package events

import (
	"bytes"
	"encoding/json"
	"unicode/utf8"
)

// decodeEnvelope parses body as json.Unmarshal into an Event would, without
// reflection, for the bodies Orbit stores: one object whose keys are the
// envelope's own, each given once and spelt exactly as Event tags them;
// plain string values (no escapes, valid UTF-8); no seq; and data, when
// present, last. ok is false for anything else, and then json.Unmarshal
// decides: so an event is accepted and decoded exactly as json.Unmarshal
// does it, only faster (FuzzDecodeEnvelope holds it to that).
//
// A view rebuild decodes every event of the log: this parse is most of what
// reading an event costs, where the reflection of json.Unmarshal was.
func decodeEnvelope(body []byte) (e Event, ok bool) {
	i := skipSpace(body, 0)
	if i == len(body) || body[i] != '{' {
		return Event{}, false
	}
	i = skipSpace(body, i+1)
	if i < len(body) && body[i] == '}' {
		return Event{}, onlySpace(body, i+1)
	}
	var seen uint16
	for {
		key, next, ok := plainString(body, i)
		if !ok {
			return Event{}, false
		}
		bit := envelopeBit(key)
		if bit == 0 || seen&bit != 0 {
			return Event{}, false
		}
		seen |= bit
		i = skipSpace(body, next)
		if i == len(body) || body[i] != ':' {
			return Event{}, false
		}
		i = skipSpace(body, i+1)
		if key == "data" {
			// Data is last: its value is all up to the object's closing
			// brace, and valid JSON exactly when the body is.
			end := bytes.LastIndexByte(body, '}')
			if end < i || !onlySpace(body, end+1) {
				return Event{}, false
			}
			raw := bytes.TrimRight(body[i:end], " \t\r\n")
			if len(raw) == 0 || bytes.Equal(raw, []byte("null")) || !json.Valid(raw) {
				return Event{}, false
			}
			e.Data = json.RawMessage(bytes.Clone(raw))
			return e, true
		}
		start := i
		val, next, ok := plainString(body, i)
		if !ok {
			return Event{}, false
		}
		switch key {
		case "id":
			e.ID = val
		case "type":
			e.Type = val
		case "time":
			if e.Time.UnmarshalJSON(body[start:next]) != nil {
				return Event{}, false
			}
		case "run_id":
			e.RunID = val
		case "task_id":
			e.TaskID = val
		case "job":
			e.Job = val
		case "step_key":
			e.StepKey = val
		case "parent_id":
			e.ParentID = val
		}
		i = skipSpace(body, next)
		if i == len(body) {
			return Event{}, false
		}
		switch body[i] {
		case ',':
			i = skipSpace(body, i+1)
		case '}':
			if !onlySpace(body, i+1) {
				return Event{}, false
			}
			return e, true
		default:
			return Event{}, false
		}
	}
}

// envelopeBit is the bit of an envelope key decodeEnvelope reads, 0 for any
// other key.
func envelopeBit(key string) uint16 {
	switch key {
	case "id":
		return 1 << 0
	case "type":
		return 1 << 1
	case "time":
		return 1 << 2
	case "run_id":
		return 1 << 3
	case "task_id":
		return 1 << 4
	case "job":
		return 1 << 5
	case "step_key":
		return 1 << 6
	case "parent_id":
		return 1 << 7
	case "data":
		return 1 << 8
	}
	return 0
}

// plainString reads the JSON string at body[i:] when it has no escape and
// no control character and is valid UTF-8, and returns it and the index
// after its closing quote.
func plainString(body []byte, i int) (s string, next int, ok bool) {
	if i >= len(body) || body[i] != '"' {
		return "", 0, false
	}
	ascii := true
	for j := i + 1; j < len(body); j++ {
		switch c := body[j]; {
		case c == '"':
			raw := body[i+1 : j]
			if !ascii && !utf8.Valid(raw) {
				return "", 0, false
			}
			return string(raw), j + 1, true
		case c == '\\' || c < 0x20:
			return "", 0, false
		case c >= utf8.RuneSelf:
			ascii = false
		}
	}
	return "", 0, false
}

func skipSpace(body []byte, i int) int {
	for i < len(body) && isSpace(body[i]) {
		i++
	}
	return i
}

func onlySpace(body []byte, i int) bool { return skipSpace(body, i) == len(body) }

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\r' || c == '\n' }
