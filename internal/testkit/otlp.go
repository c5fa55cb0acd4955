package testkit

import (
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"

	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	common "go.opentelemetry.io/proto/otlp/common/v1"
	"google.golang.org/protobuf/proto"
)

// OTLPReceiver is an OTLP/HTTP trace receiver: it takes what an exporter
// posts to /v1/traces as the protocol's protobuf (ExportTraceServiceRequest)
// and keeps every span, as a collector would.
type OTLPReceiver struct {
	srv     *httptest.Server
	mu      sync.Mutex
	spans   []Span
	down    bool
	refused int
	headers []http.Header
}

// Span is what the receiver keeps of a span: ids in hex, as a trace
// backend shows them.
type Span struct {
	TraceID, SpanID, ParentID string
	Name                      string
	Start, End                uint64 // Unix nanoseconds
	Attrs                     map[string]string
	// Engine is the exporter's service.instance.id: the engine that sent it.
	Engine string
}

// StartOTLPReceiver starts a receiver for the test.
func StartOTLPReceiver(t testing.TB) *OTLPReceiver {
	t.Helper()
	r := &OTLPReceiver{}
	r.srv = httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(r.srv.Close)
	return r
}

// URL is the endpoint to give OTEL_EXPORTER_OTLP_ENDPOINT.
func (r *OTLPReceiver) URL() string { return r.srv.URL }

func (r *OTLPReceiver) serve(w http.ResponseWriter, req *http.Request) {
	if req.URL.Path != "/v1/traces" || req.Header.Get("Content-Type") != "application/x-protobuf" {
		http.Error(w, "want a protobuf POST to /v1/traces", http.StatusUnsupportedMediaType)
		return
	}
	body, err := io.ReadAll(req.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	r.mu.Lock()
	down := r.down
	if down {
		r.refused++
	}
	r.mu.Unlock()
	if down {
		http.Error(w, "down", http.StatusServiceUnavailable)
		return
	}
	var in collectortrace.ExportTraceServiceRequest
	if err := proto.Unmarshal(body, &in); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	r.mu.Lock()
	r.headers = append(r.headers, req.Header.Clone())
	for _, rs := range in.ResourceSpans {
		var engine string
		for _, kv := range rs.GetResource().GetAttributes() {
			if kv.Key == "service.instance.id" {
				engine = anyValue(kv.Value)
			}
		}
		for _, ss := range rs.ScopeSpans {
			for _, s := range ss.Spans {
				x := Span{TraceID: hex.EncodeToString(s.TraceId), SpanID: hex.EncodeToString(s.SpanId),
					ParentID: hex.EncodeToString(s.ParentSpanId), Name: s.Name,
					Start: s.StartTimeUnixNano, End: s.EndTimeUnixNano, Attrs: map[string]string{}, Engine: engine}
				for _, kv := range s.Attributes {
					x.Attrs[kv.Key] = anyValue(kv.Value)
				}
				r.spans = append(r.spans, x)
			}
		}
	}
	r.mu.Unlock()
	out, _ := proto.Marshal(&collectortrace.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(out)
}

// anyValue is an attribute's value as text.
func anyValue(v *common.AnyValue) string {
	switch x := v.GetValue().(type) {
	case *common.AnyValue_StringValue:
		return x.StringValue
	case *common.AnyValue_IntValue:
		return strconv.FormatInt(x.IntValue, 10)
	case *common.AnyValue_BoolValue:
		return strconv.FormatBool(x.BoolValue)
	case *common.AnyValue_DoubleValue:
		return strconv.FormatFloat(x.DoubleValue, 'g', -1, 64)
	}
	return v.String()
}

// Spans returns every span received so far.
func (r *OTLPReceiver) Spans() []Span {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Span(nil), r.spans...)
}

// Headers returns the headers of every export the receiver took, in the
// order they came.
func (r *OTLPReceiver) Headers() []http.Header {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]http.Header(nil), r.headers...)
}

// SetDown makes the receiver answer every export 503 Service Unavailable
// (which an exporter retries), as a collector that is away, or takes it
// back.
func (r *OTLPReceiver) SetDown(down bool) {
	r.mu.Lock()
	r.down = down
	r.mu.Unlock()
}

// Refused is how many exports the receiver refused while down.
func (r *OTLPReceiver) Refused() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.refused
}
