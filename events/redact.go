package events

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"regexp"
	"sort"
	"strings"
	"sync"
)

// Redacted replaces every secret Orbit removes before publishing.
const Redacted = "[REDACTED]"

// minSecretLen is the shortest value treated as a secret: shorter values
// would redact ordinary text.
const minSecretLen = 6

// Redactor removes secrets from bytes before they reach the log or a blob:
// the values of secret-named environment variables, bearer tokens, and the
// values of secret-named keys in JSON. It is safe for concurrent use.
type Redactor struct {
	mu      sync.RWMutex
	secrets [][]byte // raw values and their JSON-escaped forms, longest first
}

// SecretName reports whether an environment variable or JSON key names a
// secret: *_KEY, *_TOKEN, *_SECRET, *_PASSWORD (any case for all but _KEY,
// which is only matched in upper-case environment style so that a field such
// as "step_key" is not mistaken for one), and Authorization / x-api-key.
func SecretName(name string) bool {
	lower := strings.ToLower(name)
	switch lower {
	case "authorization", "proxy-authorization", "x-api-key", "api_key", "apikey", "api-key",
		"token", "secret", "password", "access_token", "refresh_token":
		return true
	}
	for _, suffix := range []string{"_token", "_secret", "_password", "_api_key", "-api-key", "_apikey"} {
		if strings.HasSuffix(lower, suffix) {
			return true
		}
	}
	return strings.HasSuffix(name, "_KEY")
}

// RedactorFromEnv returns a Redactor that knows the values of the process's
// secret-named environment variables.
func RedactorFromEnv() *Redactor {
	r := &Redactor{}
	for _, kv := range os.Environ() {
		name, value, ok := strings.Cut(kv, "=")
		if ok && SecretName(name) {
			r.Add(value)
		}
	}
	return r
}

// Add makes value a secret. Values shorter than six bytes are ignored.
func (r *Redactor) Add(value string) {
	if len(value) < minSecretLen {
		return
	}
	escaped, _ := json.Marshal(value)
	forms := [][]byte{[]byte(value)}
	if e := escaped[1 : len(escaped)-1]; !bytes.Equal(e, forms[0]) {
		forms = append(forms, e)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, f := range forms {
		if !containsBytes(r.secrets, f) {
			r.secrets = append(r.secrets, f)
		}
	}
	sort.Slice(r.secrets, func(i, j int) bool { return len(r.secrets[i]) > len(r.secrets[j]) })
}

func containsBytes(list [][]byte, b []byte) bool {
	for _, x := range list {
		if bytes.Equal(x, b) {
			return true
		}
	}
	return false
}

var bearer = regexp.MustCompile(`(?i)\b(bearer|basic)\s+[A-Za-z0-9._~+/=-]{8,}`)

// Bytes returns b with every known secret value and every bearer or basic
// credential replaced by [REDACTED]. b is not modified; when there is nothing
// to redact b itself is returned.
func (r *Redactor) Bytes(b []byte) []byte {
	if r == nil {
		return b
	}
	r.mu.RLock()
	for _, s := range r.secrets {
		if bytes.Contains(b, s) {
			b = bytes.ReplaceAll(b, s, []byte(Redacted))
		}
	}
	r.mu.RUnlock()
	if bytes.Contains(b, []byte("earer ")) || bytes.Contains(b, []byte("asic ")) ||
		bytes.Contains(b, []byte("EARER ")) || bytes.Contains(b, []byte("ASIC ")) {
		b = bearer.ReplaceAll(b, []byte("$1 "+Redacted))
	}
	return b
}

// String is Bytes for strings.
func (r *Redactor) String(s string) string { return string(r.Bytes([]byte(s))) }

// JSON redacts a JSON document: Bytes, plus the value of every object key
// for which SecretName is true.
func (r *Redactor) JSON(b []byte) []byte {
	b = r.Bytes(b)
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

// secretKeyHints are the endings of secret-named keys, as they appear before
// the closing quote of a JSON key, in the cases people write them in.
var secretKeyHints = func() [][]byte {
	var hints [][]byte
	for _, h := range []string{"api_key", "apikey", "api-key", "token", "secret", "password", "authorization"} {
		hints = append(hints, []byte(h+`"`), []byte(strings.ToUpper(h)+`"`), []byte(strings.ToUpper(h[:1])+h[1:]+`"`))
	}
	return append(hints, []byte(`_KEY"`))
}()

// mayHaveSecretKey is a cheap pre-check that lets JSON skip decoding for
// the common document with no secret-looking key at all.
func mayHaveSecretKey(b []byte) bool {
	for _, hint := range secretKeyHints {
		if bytes.Contains(b, hint) {
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
