package tracing

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/orbitrun/orbit/events"
)

// Environment variables of the OpenTelemetry specification that turn
// tracing on and choose the protocol; the exporters read the rest
// (headers, timeouts, TLS) themselves, and the SDK reads the sampler
// (OTEL_TRACES_SAMPLER, OTEL_TRACES_SAMPLER_ARG).
const (
	EnvEndpoint       = "OTEL_EXPORTER_OTLP_ENDPOINT"
	EnvTracesEndpoint = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
	EnvProtocol       = "OTEL_EXPORTER_OTLP_PROTOCOL"
	EnvTracesProtocol = "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"
)

// PositionFile is where, under the engine's state directory, the tracer
// keeps the sequence of the last event whose spans were exported.
const PositionFile = "tracing.pos"

// Enabled says whether tracing is on: the config's tracing.endpoint or one
// of the OTLP endpoint variables is set.
func Enabled(endpoint string) bool {
	return endpoint != "" || os.Getenv(EnvEndpoint) != "" || os.Getenv(EnvTracesEndpoint) != ""
}

// NewExporter makes the OTLP exporter: HTTP with protobuf, which every
// OTLP collector takes (port 4318). gRPC is refused with a clear error:
// its client brings golang.org/x/net/trace, whose html/template pages
// make the linker keep every exported method and would grow the binary by
// half (see "The binary" in ARCHITECTURE.md). endpoint, the config's
// tracing.endpoint, is used when no variable names one.
func NewExporter(ctx context.Context, endpoint string) (sdktrace.SpanExporter, error) {
	protocol := os.Getenv(EnvTracesProtocol)
	if protocol == "" {
		protocol = os.Getenv(EnvProtocol)
	}
	fromConfig := endpoint != "" && os.Getenv(EnvEndpoint) == "" && os.Getenv(EnvTracesEndpoint) == ""
	switch protocol {
	case "", "http/protobuf":
		var opts []otlptracehttp.Option
		if fromConfig {
			opts = append(opts, otlptracehttp.WithEndpointURL(strings.TrimSuffix(endpoint, "/")+"/v1/traces"))
		}
		return otlptracehttp.New(ctx, opts...)
	}
	return nil, fmt.Errorf("%s=%q: Orbit exports traces over OTLP http/protobuf only (a collector's port 4318); set it to http/protobuf or leave it unset", EnvProtocol, protocol)
}

// Tracer follows the log and exports the spans its events describe.
type Tracer struct {
	log    *events.Log
	tp     *sdktrace.TracerProvider
	tr     trace.Tracer
	pos    string
	logger *slog.Logger
	runs   map[string]*runState
}

type runState struct {
	job, root, traceparent string
	parent                 *events.RunLink
	parentAttempt          int
	requested, started     time.Time
	steps                  map[string]*stepState
}

type stepState struct {
	key                  string
	attempt              int
	typ, target, worker  string
	start, lastTurn      time.Time
	resumed, redelivered bool
	childRun             string
}

func stepKey(key string, attempt int) string { return key + "#" + strconv.Itoa(attempt) }

// idsKey carries the ids a span is to have to the IDGenerator.
type idsKey struct{}

type ids struct {
	trace trace.TraceID
	span  trace.SpanID
}

// derivedIDs gives every span the ids derived from what it records, so
// that a span exported twice, or by another engine, is the same span.
type derivedIDs struct{}

func (derivedIDs) NewIDs(ctx context.Context) (trace.TraceID, trace.SpanID) {
	x, _ := ctx.Value(idsKey{}).(ids)
	return x.trace, x.span
}

func (derivedIDs) NewSpanID(ctx context.Context, _ trace.TraceID) trace.SpanID {
	x, _ := ctx.Value(idsKey{}).(ids)
	return x.span
}

// New makes a Tracer that exports with exp, naming engine as the service
// instance, keeping its position in stateDir.
func New(l *events.Log, exp sdktrace.SpanExporter, stateDir, engine string, logger *slog.Logger) *Tracer {
	res := resource.NewSchemaless(
		attribute.String("service.name", "orbit"),
		attribute.String("service.instance.id", engine),
	)
	tp := sdktrace.NewTracerProvider(
		sdktrace.WithBatcher(exp),
		sdktrace.WithResource(res),
		sdktrace.WithIDGenerator(derivedIDs{}),
	)
	return &Tracer{log: l, tp: tp, tr: tp.Tracer("github.com/orbitrun/orbit/tracing"),
		pos: filepath.Join(stateDir, PositionFile), logger: logger, runs: map[string]*runState{}}
}

// Run follows the log from the position after the last exported event
// until ctx ends, exporting the spans of what it reads, and then flushes
// and shuts the exporter down. The position is written only once the
// spans before it are exported, so nothing is lost to a crash; a span is
// exported twice only by a crash between an export and the write of the
// position after it.
func (t *Tracer) Run(ctx context.Context) error {
	from := t.position() + 1
	feed, err := t.log.Follow(ctx, events.FollowOptions{FromSeq: from, Filters: []string{events.EventsRoot + "." + events.AggregateRun + ".>"}, Placeholders: true})
	if err != nil {
		return err
	}
	defer feed.Stop()
	var last, saved uint64
	save := func(ctx context.Context) {
		if last == saved {
			return
		}
		if err := t.tp.ForceFlush(ctx); err != nil {
			t.logger.Warn("tracing: export failed; the spans are exported again", "err", err)
			return
		}
		if err := os.WriteFile(t.pos, []byte(strconv.FormatUint(last, 10)), 0o600); err != nil {
			t.logger.Warn("tracing: position", "err", err)
			return
		}
		saved = last
	}
	defer func() {
		flush, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		save(flush)
		_ = t.tp.Shutdown(flush)
	}()
	// An export that failed is tried again with the next event, or after
	// a second without one.
	retry := time.NewTicker(time.Second)
	defer retry.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-retry.C:
			save(ctx)
		case ev, ok := <-feed.Events():
			if !ok {
				if err := feed.Err(); err != nil && !errors.Is(err, context.Canceled) {
					return err
				}
				return nil
			}
			if !ev.Placeholder() {
				t.handle(ctx, ev, true)
			}
			last = ev.Seq
			// The spans of what the log had are exported, and the
			// position after them written, as soon as the feed has
			// nothing more waiting: a kill between the two is the only
			// way a span is exported twice (with the same ids).
			if len(feed.Events()) == 0 {
				save(ctx)
			}
		}
	}
}

func (t *Tracer) position() uint64 {
	data, err := os.ReadFile(t.pos)
	if err != nil {
		return 0
	}
	n, _ := strconv.ParseUint(strings.TrimSpace(string(data)), 10, 64)
	return n
}

// run returns the state of run id, read back from the log up to (not
// including) seq when the tracer has not seen its start (it started before
// the position the tracer resumed from).
func (t *Tracer) run(ctx context.Context, id string, seq uint64) *runState {
	if r := t.runs[id]; r != nil {
		return r
	}
	r := &runState{root: id, steps: map[string]*stepState{}}
	t.runs[id] = r
	evs, err := t.log.Read(ctx, events.FollowOptions{Filters: []string{events.RunFilter(id)}})
	if err != nil {
		t.logger.Warn("tracing: reading a run's start", "run", id, "err", err)
		return r
	}
	for _, ev := range evs {
		if ev.Seq >= seq {
			break
		}
		t.handle(ctx, ev, false)
	}
	return r
}

// handle folds ev into the tracer's state and, when emit is set, exports
// the spans it ends.
func (t *Tracer) handle(ctx context.Context, ev events.Event, emit bool) {
	if ev.RunID == "" {
		return
	}
	if ev.Type == events.RunRequested {
		var d events.RunRequestedData
		if ev.Decode(&d) != nil {
			return
		}
		r := &runState{job: d.JobName, root: ev.RunID, traceparent: d.Traceparent, parent: d.Parent, requested: ev.Time, steps: map[string]*stepState{}}
		if d.Root != "" {
			r.root = d.Root
			if root := t.runs[d.Root]; root != nil {
				r.traceparent = root.traceparent
			}
		}
		if p := d.Parent; p != nil {
			if pr := t.runs[p.RunID]; pr != nil {
				for _, s := range pr.steps {
					if s.childRun == ev.RunID {
						r.parentAttempt = s.attempt
					}
				}
			}
		}
		t.runs[ev.RunID] = r
		return
	}
	r := t.runs[ev.RunID]
	if r == nil {
		if !emit {
			return
		}
		r = t.run(ctx, ev.RunID, ev.Seq)
	}
	if r.job == "" {
		r.job = ev.Job
	}
	switch ev.Type {
	case events.RunStarted:
		r.started = ev.Time
	case events.RunResumed:
		for _, s := range r.steps {
			s.resumed = true
		}
	case events.StepStarted:
		var d events.StepStartedData
		if ev.Decode(&d) != nil {
			return
		}
		r.steps[stepKey(ev.StepKey, d.Attempt)] = &stepState{key: ev.StepKey, attempt: d.Attempt, typ: d.ActivityType,
			target: d.Target, start: ev.Time, lastTurn: ev.Time, childRun: d.ChildRunID}
	case events.ActivityStarted:
		var d events.ActivityStartedData
		if ev.Decode(&d) != nil {
			return
		}
		if s := r.steps[stepKey(ev.StepKey, d.Attempt)]; s != nil {
			s.worker = d.Worker
			s.redelivered = s.redelivered || d.Redelivered
		}
	case events.AgentTurn:
		var d events.AgentTurnData
		if ev.Decode(&d) != nil {
			return
		}
		s := r.steps[stepKey(ev.StepKey, d.Attempt)]
		if s == nil {
			return
		}
		start := s.lastTurn
		s.lastTurn = ev.Time
		if emit {
			t.turnSpan(ctx, r, ev, s, d, start)
		}
	case events.StepFinished:
		var d events.StepFinishedData
		if ev.Decode(&d) != nil {
			return
		}
		k := stepKey(ev.StepKey, d.Attempt)
		s := r.steps[k]
		if s == nil {
			s = &stepState{key: ev.StepKey, attempt: d.Attempt, start: ev.Time}
		}
		delete(r.steps, k)
		if emit {
			t.stepSpan(ctx, ev, r, s, d)
		}
	case events.RunFinished:
		var d events.RunFinishedData
		if ev.Decode(&d) != nil {
			return
		}
		delete(t.runs, ev.RunID)
		if emit {
			t.runSpan(ctx, ev, r, d)
		}
	}
}

func (t *Tracer) base(ev events.Event, r *runState) []attribute.KeyValue {
	return []attribute.KeyValue{attribute.String("orbit.run_id", ev.RunID), attribute.String("orbit.job", r.job)}
}

// parent is the context a span of run r is started under: the trace, and
// the span of parentSpan.
func (t *Tracer) under(ctx context.Context, r *runState, parentSpan, own trace.SpanID) context.Context {
	tid := TraceID(r.root, r.traceparent)
	ctx = context.WithValue(ctx, idsKey{}, ids{trace: tid, span: own})
	if !parentSpan.IsValid() {
		return ctx
	}
	return trace.ContextWithRemoteSpanContext(ctx, trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: tid, SpanID: parentSpan, TraceFlags: trace.FlagsSampled, Remote: true}))
}

func (t *Tracer) runSpan(ctx context.Context, ev events.Event, r *runState, d events.RunFinishedData) {
	var parent trace.SpanID
	switch {
	case r.parent != nil:
		parent = StepSpanID(r.parent.RunID, r.parent.StepKey, max(r.parentAttempt, 1))
	case r.traceparent != "":
		if sc, err := ParseTraceparent(r.traceparent); err == nil {
			parent = sc.SpanID()
		}
	}
	start := r.started
	if start.IsZero() || !r.requested.IsZero() && r.requested.Before(start) {
		start = r.requested
	}
	if start.IsZero() {
		start = ev.Time.Add(-time.Duration(d.DurationMS) * time.Millisecond)
	}
	attrs := append(t.base(ev, r), attribute.String("orbit.run.state", d.State))
	if r.parent != nil {
		attrs = append(attrs, attribute.String("orbit.parent_run_id", r.parent.RunID))
	}
	_, span := t.tr.Start(t.under(ctx, r, parent, RunSpanID(ev.RunID)), "run "+r.job,
		trace.WithTimestamp(start), trace.WithAttributes(attrs...), trace.WithSpanKind(trace.SpanKindInternal))
	status(span, d.State, d.Error)
	span.End(trace.WithTimestamp(ev.Time))
}

func (t *Tracer) stepSpan(ctx context.Context, ev events.Event, r *runState, s *stepState, d events.StepFinishedData) {
	attrs := append(t.base(ev, r),
		attribute.String("orbit.step", ev.StepKey),
		attribute.String("orbit.step.type", s.typ),
		attribute.String("orbit.step.state", d.State),
		attribute.Int("orbit.attempt", d.Attempt),
		attribute.Bool("orbit.retry", d.Attempt > 1),
	)
	if s.target != "" {
		attrs = append(attrs, attribute.String("orbit.step.target", s.target))
	}
	if s.worker != "" {
		attrs = append(attrs, attribute.String("orbit.worker", s.worker), attribute.String("orbit.engine", engineOf(s.worker)))
	}
	if s.resumed || s.redelivered {
		attrs = append(attrs, attribute.Bool("orbit.resumed", true))
	}
	if s.childRun != "" {
		attrs = append(attrs, attribute.String("orbit.child_run_id", s.childRun))
	}
	_, span := t.tr.Start(t.under(ctx, r, RunSpanID(ev.RunID), StepSpanID(ev.RunID, ev.StepKey, d.Attempt)), ev.StepKey,
		trace.WithTimestamp(s.start), trace.WithAttributes(attrs...))
	status(span, d.State, d.Error)
	span.End(trace.WithTimestamp(ev.Time))
}

func (t *Tracer) turnSpan(ctx context.Context, r *runState, ev events.Event, s *stepState, d events.AgentTurnData, start time.Time) {
	attrs := append(t.base(ev, r),
		attribute.String("orbit.step", ev.StepKey),
		attribute.Int("orbit.attempt", d.Attempt),
		attribute.Int("orbit.agent.turn", d.Turn),
		attribute.String("gen_ai.system", d.Provider),
		attribute.String("gen_ai.request.model", d.Model),
		attribute.Int64("gen_ai.usage.input_tokens", d.Usage.InputTokens),
		attribute.Int64("gen_ai.usage.output_tokens", d.Usage.OutputTokens),
		attribute.String("orbit.agent.stop_reason", d.StopReason),
	)
	parent := StepSpanID(ev.RunID, ev.StepKey, d.Attempt)
	turn := spanID("orbit.turn", ev.RunID, ev.StepKey, strconv.Itoa(d.Attempt), d.Session, strconv.Itoa(d.Turn))
	_, span := t.tr.Start(t.under(ctx, r, parent, turn), "agent turn "+strconv.Itoa(d.Turn),
		trace.WithTimestamp(start), trace.WithAttributes(attrs...))
	span.End(trace.WithTimestamp(ev.Time))
	for i, tool := range d.ToolUses {
		_, call := t.tr.Start(t.under(ctx, r, turn, spanID("orbit.tool", turn.String(), strconv.Itoa(i))), "tool "+tool,
			trace.WithTimestamp(ev.Time), trace.WithAttributes(append(t.base(ev, r), attribute.String("orbit.step", ev.StepKey), attribute.String("orbit.tool", tool))...))
		call.End(trace.WithTimestamp(ev.Time))
	}
}

func status(span trace.Span, state string, e *events.ErrorInfo) {
	if state == events.StateSuccess {
		span.SetStatus(codes.Ok, "")
		return
	}
	msg := state
	if e != nil {
		msg = e.Message
	}
	span.SetStatus(codes.Error, msg)
}

// engineOf is the engine part of a worker's name (engine/worker), or the
// name itself.
func engineOf(worker string) string {
	if i := strings.LastIndex(worker, "/"); i > 0 {
		return worker[:i]
	}
	return worker
}
