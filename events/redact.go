package events

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"regexp"
	"strings"
	"sync"
)

// Redacted replaces every secret Orbit removes before publishing.
const Redacted = "[REDACTED]"

// minSecretLen is the shortest value treated as a secret: shorter values
// would redact ordinary text.
const minSecretLen = 6

// Redactor removes secrets from bytes before they reach the log or a blob:
// the values of secret-named environment variables and every other value
// made a secret with Add (the engine's seeds, the log key, attempt tokens)
// in the forms secretForms lists — as they are, JSON-escaped, in hex, in
// base64 at any alignment, in part from partialRun characters on, folded
// over lines — bearer tokens, and the values of secret-named keys in JSON.
// It is safe for concurrent use.
type Redactor struct {
	mu      sync.RWMutex
	secrets map[string]bool // the values added
	index   formIndex
}

// SecretName reports whether an environment variable or JSON key names a
// secret: *_KEY, *_TOKEN, *_SECRET, *_PASSWORD (any case for all but _KEY,
// which is only matched in upper-case environment style so that a field such
// as "step_key" is not mistaken for one), and Authorization / x-api-key.
func SecretName(name string) bool { return secretName([]byte(name)) }

// Secret names, in lower case: whole, and endings.
var (
	secretNames = []string{"authorization", "proxy-authorization", "x-api-key", "api_key", "apikey", "api-key",
		"token", "secret", "password", "access_token", "refresh_token"}
	secretSuffixes = []string{"_token", "_secret", "_password", "_api_key", "-api-key", "_apikey"}
)

// secretName is SecretName without allocating, for every key of every
// document JSON redacts.
func secretName(name []byte) bool {
	if len(name) == 0 {
		return false
	}
	// Every secret name ends with one of these.
	switch name[len(name)-1] | 0x20 {
	case 'n', 't', 'd', 'y':
	default:
		return false
	}
	for _, s := range secretNames {
		if len(name) == len(s) && foldEqual(name, s) {
			return true
		}
	}
	for _, s := range secretSuffixes {
		if len(name) >= len(s) && hasFoldPrefix(name[len(name)-len(s):], s) {
			return true
		}
	}
	return len(name) >= 4 && string(name[len(name)-4:]) == "_KEY"
}

// hasFoldPrefix reports whether b begins with lower, ignoring ASCII case.
func hasFoldPrefix(b []byte, lower string) bool {
	return len(b) >= len(lower) && foldEqual(b, lower)
}

// foldEqual reports whether b begins with lower, ignoring ASCII case; b is
// at least as long.
func foldEqual(b []byte, lower string) bool {
	for i := range lower {
		c := b[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != lower[i] {
			return false
		}
	}
	return true
}

// RedactorFromEnv returns a Redactor that knows the values of the process's
// secret-named environment variables, but for fileNamed's.
func RedactorFromEnv() *Redactor {
	r := &Redactor{}
	for _, kv := range os.Environ() {
		name, value, ok := strings.Cut(kv, "=")
		if ok && SecretName(name) && !fileNamed[name] {
			r.Add(value)
		}
	}
	return r
}

// fileNamed are Orbit's own secret-named variables whose value is the name
// of a file, not a secret: as one, a path would redact every path under
// its directory, in the log and in the steps' inputs. The key the file
// holds is made a secret when it is read (Add).
var fileNamed = map[string]bool{"ORBIT_LOG_KEY": true}

// Add makes value a secret. Values shorter than six bytes are ignored.
func (r *Redactor) Add(value string) {
	if len(value) < minSecretLen {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.secrets[value] {
		return
	}
	if r.secrets == nil {
		r.secrets = map[string]bool{}
	}
	r.secrets[value] = true
	for _, f := range secretForms([]byte(value)) {
		r.index.add(f)
	}
}

var bearer = regexp.MustCompile(`(?i)\b(bearer|basic)\s+[A-Za-z0-9._~+/=-]{8,}`)

// Bytes returns b with every known secret, in each of its forms, and every
// bearer or basic credential replaced by [REDACTED]. b is not modified;
// when there is nothing to redact b itself is returned. Valid JSON stays
// valid: a run is widened to the JSON escapes it cuts (see snap).
func (r *Redactor) Bytes(b []byte) []byte { return r.redact(b, false) }

// redact is Bytes; json says b is a JSON document, which stays one.
func (r *Redactor) redact(b []byte, json bool) []byte {
	if r == nil {
		return b
	}
	r.mu.RLock()
	spans := r.index.spans(b, json)
	r.mu.RUnlock()
	if len(spans) > 0 {
		b = replaceSpans(b, spans)
	}
	if mayHaveCredential(b) {
		b = bearer.ReplaceAll(b, []byte("$1 "+Redacted))
	}
	return b
}

// mayHaveCredential is a cheap pre-check for bearer: whether b has
// "bearer " or "basic " in any case.
func mayHaveCredential(b []byte) bool {
	for _, first := range []byte{'b', 'B'} {
		for i := 0; i < len(b); {
			j := bytes.IndexByte(b[i:], first)
			if j < 0 {
				break
			}
			i += j + 1
			if rest := b[i:]; hasFoldPrefix(rest, "earer ") || hasFoldPrefix(rest, "asic ") {
				return true
			}
		}
	}
	return false
}

// replaceSpans returns a copy of b with each span (sorted, apart) replaced
// by Redacted.
func replaceSpans(b []byte, spans []span) []byte {
	out := make([]byte, 0, len(b))
	at := 0
	for _, s := range spans {
		out = append(out, b[at:s.start]...)
		out = append(out, Redacted...)
		at = s.end
	}
	return append(out, b[at:]...)
}

// String is Bytes for strings.
func (r *Redactor) String(s string) string { return string(r.Bytes([]byte(s))) }

// JSON redacts a JSON document: Bytes, plus the value of every object key
// for which SecretName is true.
func (r *Redactor) JSON(b []byte) []byte {
	b = r.redact(b, true)
	if !mayHaveSecretKey(b) {
		return b
	}
	var v any
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return b
	}
	if !redactKeys(v) {
		return b
	}
	out, err := json.Marshal(v)
	if err != nil {
		return b
	}
	return out
}

// mayHaveSecretKey is a cheap pre-check that lets JSON skip decoding the
// common document with no secret-named key at all: it looks at each string
// followed by a colon, and takes one with an escape in it for a secret
// name.
func mayHaveSecretKey(b []byte) bool {
	for i := 0; i < len(b); {
		c := bytes.IndexByte(b[i:], ':')
		if c < 0 {
			return false
		}
		c += i
		i = c + 1
		end := c - 1
		for end >= 0 && (b[end] == ' ' || b[end] == '\t' || b[end] == '\n' || b[end] == '\r') {
			end--
		}
		if end < 0 || b[end] != '"' || escaped(b, end) {
			continue // a colon in a string, not after a key
		}
		start := bytes.LastIndexByte(b[:end], '"')
		for start > 0 && escaped(b, start) {
			start = bytes.LastIndexByte(b[:start], '"')
		}
		if start < 0 {
			continue
		}
		if key := b[start+1 : end]; bytes.IndexByte(key, '\\') >= 0 || secretName(key) {
			return true
		}
	}
	return false
}

// redactKeys replaces the values of secret-named keys in place and reports
// whether it changed anything.
func redactKeys(v any) bool {
	changed := false
	switch t := v.(type) {
	case map[string]any:
		for k, val := range t {
			if SecretName(k) {
				if s, ok := val.(string); !ok || s != Redacted {
					t[k] = Redacted
					changed = true
				}
				continue
			}
			if redactKeys(val) {
				changed = true
			}
		}
	case []any:
		for _, val := range t {
			if redactKeys(val) {
				changed = true
			}
		}
	}
	return changed
}

// Handler wraps a log handler so that every message and attribute it logs
// is redacted first: operators' logs are no place for secrets either.
func (r *Redactor) Handler(h slog.Handler) slog.Handler { return &redactingHandler{h: h, r: r} }

type redactingHandler struct {
	h slog.Handler
	r *Redactor
}

func (rh *redactingHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return rh.h.Enabled(ctx, l)
}

func (rh *redactingHandler) Handle(ctx context.Context, rec slog.Record) error {
	out := slog.NewRecord(rec.Time, rec.Level, rh.r.String(rec.Message), rec.PC)
	rec.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(rh.attr(a))
		return true
	})
	return rh.h.Handle(ctx, out)
}

func (rh *redactingHandler) attr(a slog.Attr) slog.Attr {
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindGroup:
		group := v.Group()
		attrs := make([]any, len(group))
		for i, g := range group {
			attrs[i] = rh.attr(g)
		}
		return slog.Group(a.Key, attrs...)
	case slog.KindString, slog.KindAny:
		return slog.String(a.Key, rh.r.String(v.String()))
	}
	return a
}

func (rh *redactingHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	out := make([]slog.Attr, len(attrs))
	for i, a := range attrs {
		out[i] = rh.attr(a)
	}
	return &redactingHandler{h: rh.h.WithAttrs(out), r: rh.r}
}

func (rh *redactingHandler) WithGroup(name string) slog.Handler {
	return &redactingHandler{h: rh.h.WithGroup(name), r: rh.r}
}
