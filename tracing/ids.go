// Package tracing turns the log into OpenTelemetry traces: one trace per
// run (the run at the top of a chain of job.invoke steps, whose child runs
// are child spans), a span per step attempt, agent turns and Groundhog
// attempts. Spans are made from the log's events, not from the code that
// runs the work, so a run an engine resumed after a crash gives each span
// once, and any engine that reads the log gives the same ids.
package tracing

import (
	"crypto/sha256"
	"fmt"
	"strconv"
	"strings"

	"go.opentelemetry.io/otel/trace"

	"github.com/orbitrun/orbit/events"
)

// TraceID is the trace of the runs under root (see events.RunTraceID).
func TraceID(root, traceparent string) trace.TraceID {
	id, _ := trace.TraceIDFromHex(events.RunTraceID(root, traceparent))
	return id
}

func spanID(parts ...string) trace.SpanID {
	var id trace.SpanID
	d := sha256.Sum256([]byte(strings.Join(parts, "\x00")))
	copy(id[:], d[:8])
	return id
}

// RunSpanID is the span of a run.
func RunSpanID(runID string) trace.SpanID { return spanID("orbit.run", runID) }

// StepSpanID is the span of one attempt of a step of a run.
func StepSpanID(runID, stepKey string, attempt int) trace.SpanID {
	return spanID("orbit.step", runID, stepKey, strconv.Itoa(attempt))
}

// Traceparent is the W3C traceparent header of a span, sampled.
func Traceparent(tid trace.TraceID, sid trace.SpanID) string {
	return fmt.Sprintf("00-%s-%s-01", tid, sid)
}

// StepTraceparent is the traceparent a step attempt passes to what it runs
// (TRACEPARENT for shell steps and CLI agents): its own span, in the trace
// of root.
func StepTraceparent(root, rootTraceparent, runID, stepKey string, attempt int) string {
	return Traceparent(TraceID(root, rootTraceparent), StepSpanID(runID, stepKey, attempt))
}

// ParseTraceparent reads a W3C traceparent (version 00):
// 00-<32 hex trace id>-<16 hex span id>-<2 hex flags>.
func ParseTraceparent(s string) (trace.SpanContext, error) {
	parts := strings.Split(strings.TrimSpace(s), "-")
	if _, ok := events.TraceparentTraceID(s); !ok || len(parts) != 4 {
		return trace.SpanContext{}, fmt.Errorf("traceparent %q: want 00-<32 hex digits>-<16 hex digits>-<2 hex digits>", s)
	}
	tid, err := trace.TraceIDFromHex(parts[1])
	if err != nil {
		return trace.SpanContext{}, fmt.Errorf("traceparent %q: trace id: %w", s, err)
	}
	sid, err := trace.SpanIDFromHex(parts[2])
	if err != nil {
		return trace.SpanContext{}, fmt.Errorf("traceparent %q: span id: %w", s, err)
	}
	flags, err := strconv.ParseUint(parts[3], 16, 8)
	if err != nil {
		return trace.SpanContext{}, fmt.Errorf("traceparent %q: flags: %w", s, err)
	}
	return trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: trace.TraceFlags(flags), Remote: true}), nil
}
