package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
)

// Provider names, as a spec's `provider:` says them.
const (
	ProviderClaude       = "claude"
	ProviderOpenAICompat = "openai_compat"
	ProviderReplay       = "replay"
)

// ProviderOptions say which provider to build and how to reach it. The zero
// value of every field but Name means "the provider's default": a field set
// here wins over the environment, which wins over the SDK's default.
type ProviderOptions struct {
	Name    string // ProviderClaude, ProviderOpenAICompat or ProviderReplay
	BaseURL string // overrides the provider's default and its env variable
	APIKey  string // overrides the provider's env variable
	// Fixture is the replay fixture file (replay only). Empty means
	// ORBIT_REPLAY_FIXTURE, then ORBIT_V2_REPLAY_FIXTURE.
	Fixture string
	// FixtureData is the fixture itself when it is not a file (a seeded
	// fixture, a test); Fixture then only names it (replay only).
	FixtureData []byte
	// Start is the index of the first turn the replay provider returns: the
	// turns this run has already consumed (replay only).
	Start int
	// HTTPClient carries the requests of the HTTP providers (nil: the SDK's
	// default client). Deadlines come from the context of each call.
	HTTPClient *http.Client
	// Env looks up environment variables (nil: os.Getenv).
	Env func(string) string
}

func (o ProviderOptions) getenv(name string) string {
	if o.Env == nil {
		return os.Getenv(name)
	}
	return o.Env(name)
}

// providers maps each known name to its constructor. There is no alias and
// no fallback: a name that is not here is an error.
var providers = map[string]func(ProviderOptions) (Provider, error){
	ProviderClaude:       newClaude,
	ProviderOpenAICompat: newOpenAICompat,
	ProviderReplay:       newReplayFromOptions,
}

// ProviderNames returns the names NewProvider knows, sorted.
func ProviderNames() []string {
	names := make([]string, 0, len(providers))
	for name := range providers {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// NewProvider builds the provider opts.Name names. An unknown name is an
// error wrapping ErrUnknownProvider that lists the known ones.
//
// IMPORTANT: NewProvider never substitutes one provider for another. The
// offline switch (ORBIT_REPLAY_FIXTURE replacing whatever a spec names) is
// the caller's decision, made by asking for ProviderReplay.
//
// The HTTP providers never retry (retries are the job's business) and their
// errors never contain the API key.
func NewProvider(opts ProviderOptions) (Provider, error) {
	newFn, ok := providers[opts.Name]
	if !ok {
		return nil, fmt.Errorf("%w %q (known: %s)", ErrUnknownProvider, opts.Name, strings.Join(ProviderNames(), ", "))
	}
	return newFn(opts)
}

// firstNonEmpty returns the first of values that is not empty.
func firstNonEmpty(values ...string) string {
	for _, v := range values {
		if v != "" {
			return v
		}
	}
	return ""
}

// checkBaseURL rejects a base URL the SDKs could not use, without echoing a
// credential the URL may carry (a password, the key).
func checkBaseURL(provider, raw, key string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("%s: base URL is not a URL", provider)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("%s: base URL %q: want http(s)://host[/path]", provider, redact(u.Redacted(), key))
	}
	return nil
}

// maxErrorBody caps how much of an error response is kept.
const maxErrorBody = 64 << 10

// exchange records what came back from the one HTTP attempt of a call.
// Errors are classified from it, not from the SDKs' error values: those
// print request URLs and raw bodies, and their types differ between SDKs.
//
// An exchange is used by one call only.
type exchange struct {
	status      int    // 0: no response came back
	contentType string // of the response
	body        []byte // error responses only, capped at maxErrorBody
	readErr     error  // reading a successful response's body failed
}

// middleware has the shape of both SDKs' option.Middleware.
func (x *exchange) middleware(req *http.Request, next func(*http.Request) (*http.Response, error)) (*http.Response, error) {
	res, err := next(req)
	if err != nil || res == nil {
		return res, err
	}
	x.status = res.StatusCode
	x.contentType = res.Header.Get("Content-Type")
	if res.StatusCode >= 400 {
		body, _ := io.ReadAll(io.LimitReader(res.Body, maxErrorBody))
		_ = res.Body.Close()
		x.body = body
		res.Body = io.NopCloser(bytes.NewReader(body))
		return res, nil
	}
	res.Body = &recordingBody{ReadCloser: res.Body, x: x}
	return res, nil
}

// recordingBody notes a failure to read a response body, which is a
// transport failure (a dropped connection), not a malformed answer.
type recordingBody struct {
	io.ReadCloser
	x *exchange
}

func (b *recordingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err != nil && !errors.Is(err, io.EOF) && b.x.readErr == nil {
		b.x.readErr = err
	}
	return n, err
}

// retryableStatus says whether an HTTP status is worth asking again: a
// timeout, a conflict, a rate limit, a server error or an overload (529).
func retryableStatus(status int) bool {
	switch {
	case status == http.StatusRequestTimeout, status == http.StatusConflict, status == http.StatusTooManyRequests:
		return true
	case status >= 500:
		return true
	}
	return false
}

// httpFailure turns the error of an SDK call into what Complete returns:
// the context's error when the call was cancelled, else a *ProviderError
// whose message comes from the exchange and has the key redacted.
func httpFailure(ctx context.Context, provider, key string, x *exchange, err error) error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		return fmt.Errorf("%s: %w", provider, ctxErr)
	}
	switch {
	case x.status >= 400:
		return &ProviderError{
			Provider:  provider,
			Status:    x.status,
			Message:   redact(apiErrorMessage(x.status, x.body), key),
			Retryable: retryableStatus(x.status),
		}
	case x.readErr != nil:
		return &ProviderError{
			Provider:  provider,
			Message:   "reading the response: " + redact(x.readErr.Error(), key),
			Retryable: true,
		}
	case x.status != 0 && !isJSONType(x.contentType):
		return malformed(provider, key, fmt.Sprintf("HTTP %d with %s, not JSON", x.status, orUnknown(x.contentType)))
	case x.status != 0:
		return malformed(provider, key, fmt.Sprintf("HTTP %d: %v", x.status, err))
	default:
		// No response came back: the connection failed.
		return &ProviderError{Provider: provider, Message: redact(err.Error(), key), Retryable: true}
	}
}

// malformed is the error for an answer that could not be understood.
// Asking again is not expected to help.
func malformed(provider, key, detail string) *ProviderError {
	return &ProviderError{Provider: provider, Message: "malformed response: " + redact(detail, key)}
}

// isJSONType says whether a content type is JSON, as the SDKs decide it.
func isJSONType(contentType string) bool {
	mediaType, _, _ := mime.ParseMediaType(contentType)
	return strings.Contains(mediaType, "application/json") || strings.HasSuffix(mediaType, "+json")
}

func orUnknown(contentType string) string {
	if contentType == "" {
		return "no content type"
	}
	return contentType
}

// apiErrorMessage finds the message in an error body. Both APIs send
// {"error": {"type": …, "message": …}}; servers that imitate them also send
// {"error": "…"}, {"message": "…"} or {"detail": "…"}. Anything else is
// quoted, shortened.
func apiErrorMessage(status int, body []byte) string {
	var envelope struct {
		Error   json.RawMessage `json:"error"`
		Message string          `json:"message"`
		Detail  any             `json:"detail"`
	}
	if json.Unmarshal(body, &envelope) == nil {
		var inner struct {
			Type    string `json:"type"`
			Message string `json:"message"`
		}
		var text string
		switch {
		case json.Unmarshal(envelope.Error, &inner) == nil && inner.Message != "":
			if inner.Type != "" {
				return inner.Message + " (" + inner.Type + ")"
			}
			return inner.Message
		case json.Unmarshal(envelope.Error, &text) == nil && text != "":
			return text
		case envelope.Message != "":
			return envelope.Message
		case envelope.Detail != nil:
			if s, ok := envelope.Detail.(string); ok {
				return s
			}
			detail, _ := json.Marshal(envelope.Detail)
			return shorten(string(detail))
		}
	}
	if text := strings.TrimSpace(string(body)); text != "" {
		return shorten(text)
	}
	return http.StatusText(status)
}

// shorten keeps the start of a long text.
func shorten(s string) string { return capText(s, 300) }

// redact removes a credential from a text that may have picked it up (a
// URL, an echoed header).
func redact(s, key string) string {
	if key == "" {
		return s
	}
	return strings.ReplaceAll(s, key, "[redacted]")
}

// wireNames maps the engine's tool names (fs.read) to names both APIs
// accept (^[a-zA-Z0-9_-]{1,64}$: fs_read) and back. The mapping is built
// per request from its tools; a name the model answers with that is not in
// it is passed through unchanged.
type wireNames struct {
	wire map[string]string // engine name → wire name
	back map[string]string // wire name → engine name
}

// maxToolName is the longest tool name both APIs accept.
const maxToolName = 64

func newWireNames(tools []ToolSpec) (*wireNames, error) {
	n := &wireNames{wire: map[string]string{}, back: map[string]string{}}
	for i, t := range tools {
		if t.Name == "" {
			return nil, fmt.Errorf("tools[%d]: no name", i)
		}
		w := wireToolName(t.Name)
		if prev, dup := n.back[w]; dup && prev != t.Name {
			return nil, fmt.Errorf("tools %q and %q have the same name on the wire (%q)", prev, t.Name, w)
		}
		n.wire[t.Name] = w
		n.back[w] = t.Name
	}
	return n, nil
}

// toWire returns the name the API sees for an engine name.
func (n *wireNames) toWire(name string) string {
	if w, ok := n.wire[name]; ok {
		return w
	}
	return wireToolName(name)
}

// fromWire returns the engine name for a name the model used.
func (n *wireNames) fromWire(name string) string {
	if orig, ok := n.back[name]; ok {
		return orig
	}
	return name
}

// wireToolName replaces every character the APIs refuse with '_' and cuts
// the name to maxToolName bytes.
func wireToolName(name string) string {
	b := []byte(name)
	for i, c := range b {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-'
		if !ok {
			b[i] = '_'
		}
	}
	if len(b) > maxToolName {
		b = b[:maxToolName]
	}
	return string(b)
}

// objectSchema returns a tool's JSON schema, compacted, as the object both
// APIs want: an empty schema is {"type":"object"}, and a schema without a
// type gets "type":"object" first. Its other fields are left as they are,
// in their order, so that every turn sends the same bytes.
func objectSchema(name string, schema json.RawMessage) (json.RawMessage, error) {
	if len(bytes.TrimSpace(schema)) == 0 {
		return json.RawMessage(`{"type":"object"}`), nil
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(schema, &fields); err != nil || fields == nil {
		return nil, fmt.Errorf("tool %q: input_schema is not a JSON object", name)
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, schema); err != nil {
		return nil, fmt.Errorf("tool %q: input_schema: %w", name, err)
	}
	if t, ok := fields["type"]; ok {
		var typ string
		if json.Unmarshal(t, &typ) != nil || typ != "object" {
			return nil, fmt.Errorf("tool %q: input_schema type must be \"object\"", name)
		}
		return compact.Bytes(), nil
	}
	inner := bytes.TrimSpace(compact.Bytes()[1 : compact.Len()-1])
	out := []byte(`{"type":"object"`)
	if len(inner) > 0 {
		out = append(append(out, ','), inner...)
	}
	return append(out, '}'), nil
}

// toolInput returns a tool_use input as JSON to send, "{}" when empty.
func toolInput(i int, b Block) (json.RawMessage, error) {
	in := bytes.TrimSpace(b.Input)
	if len(in) == 0 {
		return json.RawMessage(`{}`), nil
	}
	if !json.Valid(in) {
		return nil, fmt.Errorf("content[%d]: tool_use %q: input is not valid JSON", i, b.ID)
	}
	return json.RawMessage(in), nil
}
