package tracing

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/internal/failpoint"
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
	log *events.Log
	exp sdktrace.SpanExporter
	tp  *sdktrace.TracerProvider
	tr  trace.Tracer
	// sampler starts the spans that ask the sampler about a trace: a
	// provider of the same sampler with no processor, so they go nowhere.
	sampler trace.Tracer
	ended   *ended
	claim   *claim
	logger  *slog.Logger
	runs    map[string]*runState
	// attempts are the open Groundhog attempts, by attemptKey.
	attempts map[string]*attemptState
	// reexport is the claim's InFlight when this engine took it: the spans
	// of events up to it may have been exported already.
	reexport uint64
}

type runState struct {
	job, root, traceparent string
	parent                 *events.RunLink
	parentAttempt          int
	requested, started     time.Time
	steps                  map[string]*stepState
	// sampled is the sampler's decision for the run's trace, once asked.
	sampled *bool
}

type stepState struct {
	key                  string
	attempt              int
	typ, target, worker  string
	start, lastTurn      time.Time
	resumed, redelivered bool
	childRun             string
	turns                map[int]trace.SpanID // the spans of its agent turns, by number
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
// instance. The spans are exported by one engine of those that share the
// log at a time, the holder of the claim (ClaimKey); takeOver says that
// any other engine's claim is a dead one's (an embedded store, which one
// engine runs).
func New(l *events.Log, exp sdktrace.SpanExporter, engine string, takeOver bool, logger *slog.Logger) *Tracer {
	res := resource.NewSchemaless(
		attribute.String("service.name", "orbit"),
		attribute.String("service.instance.id", engine),
	)
	e := &ended{}
	tp := sdktrace.NewTracerProvider(
		sdktrace.WithSpanProcessor(e),
		sdktrace.WithResource(res),
		sdktrace.WithIDGenerator(derivedIDs{}),
	)
	sampler := sdktrace.NewTracerProvider(sdktrace.WithIDGenerator(derivedIDs{}))
	return &Tracer{log: l, exp: exp, tp: tp, tr: tp.Tracer("github.com/orbitrun/orbit/tracing"), ended: e,
		sampler: sampler.Tracer("github.com/orbitrun/orbit/tracing"),
		claim:   &claim{kv: l.Leases(), engine: engine, takeOver: takeOver}, logger: logger, runs: map[string]*runState{},
		attempts: map[string]*attemptState{}}
}

// ended keeps the spans that ended until the tracer exports them: the
// tracer, not a batching processor, decides when spans are exported, so
// that it knows which events' spans an export holds.
type ended struct {
	mu    sync.Mutex
	spans []sdktrace.ReadOnlySpan
}

func (e *ended) OnStart(context.Context, sdktrace.ReadWriteSpan) {}

func (e *ended) OnEnd(s sdktrace.ReadOnlySpan) {
	if !s.SpanContext().IsSampled() {
		return
	}
	e.mu.Lock()
	e.spans = append(e.spans, s)
	e.mu.Unlock()
}

func (e *ended) take() []sdktrace.ReadOnlySpan {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := e.spans
	e.spans = nil
	return out
}

func (e *ended) count() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.spans)
}

func (e *ended) Shutdown(context.Context) error   { return nil }
func (e *ended) ForceFlush(context.Context) error { return nil }

// maxBatch is the most spans one export holds: a long backlog is exported
// in pieces, each recorded.
const maxBatch = 512

// Run exports the spans of the log's runs until ctx ends: it waits for
// the claim, follows the log from the claim's position and exports what
// it reads, and when another engine took the claim over (this one looked
// dead) waits for it again. It then shuts the exporter down.
func (t *Tracer) Run(ctx context.Context) error {
	defer func() {
		stop, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		_ = t.tp.Shutdown(stop)
		_ = t.exp.Shutdown(stop)
	}()
	for {
		if err := t.claim.acquire(ctx); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		t.logger.Info("this engine exports the traces", "from", t.claim.Position+1)
		err := t.follow(ctx)
		if ctx.Err() != nil {
			return nil
		}
		if !errors.Is(err, errClaimLost) {
			return err
		}
		t.logger.Warn("tracing: another engine took the export of the traces over")
		t.runs = map[string]*runState{}
		t.attempts = map[string]*attemptState{}
		t.ended.take()
	}
}

// follow exports the spans of the log's events from the claim's position
// until ctx ends or the claim is lost. An export goes in three steps: the
// claim records the events whose spans are in flight, the exporter sends
// them, the claim records the new position. A crash between the first
// and the last leaves it unknown whether the collector has them: the
// next holder exports them again, marked (orbit.reexported). Nothing is
// exported unrecorded, and nothing is lost.
func (t *Tracer) follow(ctx context.Context) (err error) {
	c := t.claim
	t.reexport = c.InFlight
	feed, err := t.log.Follow(ctx, events.FollowOptions{FromSeq: c.Position + 1, Filters: []string{
		events.EventsRoot + "." + events.AggregateRun + ".>", events.EventsRoot + "." + events.AggregateTask + ".>"}, Placeholders: true})
	if err != nil {
		return err
	}
	defer feed.Stop()
	last := c.Position
	var batch []sdktrace.ReadOnlySpan
	// save exports what was read and records it; an error other than
	// errClaimLost (the collector or the bucket unavailable) leaves
	// it to be done again.
	save := func(ctx context.Context) error {
		batch = append(batch, t.ended.take()...)
		if last == c.Position {
			if c.due() {
				return c.write(ctx, false)
			}
			return nil
		}
		if len(batch) > 0 {
			if c.InFlight < last {
				prev := c.InFlight
				c.InFlight = last
				if err := c.write(ctx, false); err != nil {
					c.InFlight = prev
					return err
				}
			}
			if err := t.export(ctx, batch); err != nil {
				return err
			}
			batch = nil
			failpoint.Hit("tracing-after-export")
		}
		pos, inFlight := c.Position, c.InFlight
		c.Position = last
		if c.InFlight <= last {
			c.InFlight = 0
		}
		if err := c.write(ctx, false); err != nil {
			c.Position, c.InFlight = pos, inFlight
			return err
		}
		return nil
	}
	defer func() {
		if err != nil {
			return
		}
		stop, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		if err := save(stop); err != nil {
			t.logger.Warn("tracing: exporting the last spans", "err", err)
			return
		}
		if err := c.release(stop); err != nil {
			t.logger.Warn("tracing: releasing the claim", "err", err)
		}
	}()
	// A failed save is tried again every second, and the log is not read
	// further meanwhile, so that what waits for export stays bounded.
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	failing := false
	for {
		in := feed.Events()
		if failing {
			in = nil
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
			failing = t.saved(save(ctx), &err)
			if err != nil {
				return err
			}
		case ev, ok := <-in:
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
			// What the log had is exported as soon as the feed has
			// nothing more waiting, or a batch is full.
			if len(feed.Events()) == 0 || len(batch)+t.ended.count() >= maxBatch {
				failing = t.saved(save(ctx), &err)
				if err != nil {
					return err
				}
			}
		}
	}
}

// export sends batch, renewing the claim meanwhile: the exporter retries
// while the collector is away (for a minute), and the claim must not lapse
// meanwhile, or another engine would take it and send the same spans.
// Once the claim is lost the export is given up.
func (t *Tracer) export(ctx context.Context, batch []sdktrace.ReadOnlySpan) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	done := make(chan struct{})
	renewed := make(chan struct{})
	go func() {
		defer close(renewed)
		tick := time.NewTicker(ClaimTTL / 3)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				if err := t.claim.write(ctx, false); errors.Is(err, errClaimLost) {
					cancel(err)
					return
				}
			}
		}
	}()
	err := t.exp.ExportSpans(ctx, batch)
	close(done)
	<-renewed
	if cause := context.Cause(ctx); errors.Is(cause, errClaimLost) {
		return cause
	}
	return err
}

// saved sorts the outcome of a save: a lost claim ends following (set
// into *stop), anything else is logged and tried again (failing).
func (t *Tracer) saved(err error, stop *error) (failing bool) {
	switch {
	case err == nil:
		return false
	case errors.Is(err, errClaimLost):
		*stop = err
		return false
	}
	t.logger.Warn("tracing: export failed; it is tried again", "err", err)
	return true
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
	// The run's run.requested replaced r by the state it describes.
	if cur := t.runs[id]; cur != nil {
		return cur
	}
	return r
}

// handle folds ev into the tracer's state and, when emit is set, exports
// the spans it ends.
func (t *Tracer) handle(ctx context.Context, ev events.Event, emit bool) {
	if ev.RunID == "" {
		return
	}
	if strings.HasPrefix(ev.Type, "groundhog.") {
		t.groundhog(ctx, ev, emit)
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
			target: d.Target, start: ev.Time, lastTurn: ev.Time, childRun: d.ChildRunID,
			turns: map[int]trace.SpanID{}}
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
		s.turns[d.Turn] = spanID("orbit.turn", ev.RunID, ev.StepKey, strconv.Itoa(d.Attempt), d.Session, strconv.Itoa(d.Turn))
		if emit {
			t.turnSpan(ctx, r, ev, d, start, s.turns[d.Turn])
		}
	case events.ToolCalled:
		var d events.ToolCalledData
		if ev.Decode(&d) != nil || !emit {
			return
		}
		// Under its turn; under the step when the turn is unknown.
		parent := StepSpanID(ev.RunID, ev.StepKey, d.Attempt)
		if s := r.steps[stepKey(ev.StepKey, d.Attempt)]; s != nil {
			if turn, ok := s.turns[d.Turn]; ok {
				parent = turn
			}
		}
		id := spanID("orbit.tool", ev.RunID, ev.StepKey, strconv.Itoa(d.Attempt), d.ToolUseID)
		t.toolSpan(ctx, r, ev, parent, id, append(t.base(ev, r), attribute.String("orbit.step", ev.StepKey), attribute.Int("orbit.attempt", d.Attempt)), d)
	case events.CLIInvocationFinished:
		var d events.CLIInvocationFinishedData
		if ev.Decode(&d) != nil || !emit {
			return
		}
		t.cliSpan(ctx, r, ev, d)
	case events.StepFinished:
		var d events.StepFinishedData
		if ev.Decode(&d) != nil {
			return
		}
		k := stepKey(ev.StepKey, d.Attempt)
		s := r.steps[k]
		if s == nil {
			s = &stepState{key: ev.StepKey, attempt: d.Attempt, start: ev.Time}
			if d.Started != nil {
				// A decided step's one event stands for its step.started.
				s.typ, s.target = d.Started.ActivityType, d.Started.Target
			}
		}
		if d.Worker != "" {
			// Under step protocol 3 a deterministic action's execution has
			// no activity.started: its step.finished names its worker.
			s.worker = d.Worker
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
	attrs := []attribute.KeyValue{attribute.String("orbit.run_id", ev.RunID), attribute.String("orbit.job", r.job)}
	if ev.Seq <= t.reexport {
		attrs = append(attrs, attribute.Bool("orbit.reexported", true))
	}
	return attrs
}

// parent is the context a span of run r is started under: the trace, and
// the span of parentSpan.
func (t *Tracer) under(ctx context.Context, r *runState, parentSpan, own trace.SpanID) context.Context {
	tid := TraceID(r.root, r.traceparent)
	ctx = context.WithValue(ctx, idsKey{}, ids{trace: tid, span: own})
	if !parentSpan.IsValid() {
		return ctx
	}
	var flags trace.TraceFlags
	if t.sampled(ctx, r) {
		flags = trace.FlagsSampled
	}
	return trace.ContextWithRemoteSpanContext(ctx, trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: tid, SpanID: parentSpan, TraceFlags: flags, Remote: true}))
}

// sampled is the sampler's decision (OTEL_TRACES_SAMPLER) for the trace of
// run r, asked as the trace's root span is started: under the caller's
// traceparent, with the caller's flags, or as a root. Every other span of
// the trace is started under a parent that carries that decision, so a
// parent-based sampler (the default) keeps or drops a trace whole, and a
// caller that did not sample its trace (flags 00) gets none. The standard
// samplers decide by the trace id and the parent alone, so every engine
// decides alike.
func (t *Tracer) sampled(ctx context.Context, r *runState) bool {
	if r.sampled != nil {
		return *r.sampled
	}
	tid := TraceID(r.root, r.traceparent)
	ctx = context.WithValue(ctx, idsKey{}, ids{trace: tid, span: RunSpanID(r.root)})
	if sc, err := ParseTraceparent(r.traceparent); r.traceparent != "" && err == nil {
		ctx = trace.ContextWithRemoteSpanContext(ctx, sc)
	}
	_, span := t.sampler.Start(ctx, "sample")
	span.End()
	yes := span.SpanContext().IsSampled()
	r.sampled = &yes
	return yes
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

func (t *Tracer) turnSpan(ctx context.Context, r *runState, ev events.Event, d events.AgentTurnData, start time.Time, id trace.SpanID) {
	attrs := append(t.base(ev, r), attribute.String("orbit.step", ev.StepKey), attribute.Int("orbit.attempt", d.Attempt))
	_, span := t.tr.Start(t.under(ctx, r, StepSpanID(ev.RunID, ev.StepKey, d.Attempt), id), "agent turn "+strconv.Itoa(d.Turn),
		trace.WithTimestamp(start), trace.WithAttributes(append(attrs, turnAttrs(d)...)...))
	span.End(trace.WithTimestamp(ev.Time))
}

// turnAttrs are the attributes of a model turn: the model, why it stopped,
// the tokens (OpenTelemetry's gen_ai names).
func turnAttrs(d events.AgentTurnData) []attribute.KeyValue {
	return []attribute.KeyValue{
		attribute.Int("orbit.agent.turn", d.Turn),
		attribute.String("gen_ai.system", d.Provider),
		attribute.String("gen_ai.request.model", d.Model),
		attribute.Int64("gen_ai.usage.input_tokens", d.Usage.InputTokens),
		attribute.Int64("gen_ai.usage.output_tokens", d.Usage.OutputTokens),
		attribute.Int64("gen_ai.usage.cache_read_tokens", d.Usage.CacheReadTokens),
		attribute.Int64("gen_ai.usage.cache_write_tokens", d.Usage.CacheWriteTokens),
		attribute.String("orbit.agent.stop_reason", d.StopReason),
	}
}

// toolSpan is a tool call, ending when it was recorded and lasting what
// it took.
func (t *Tracer) toolSpan(ctx context.Context, r *runState, ev events.Event, parent, id trace.SpanID, attrs []attribute.KeyValue, d events.ToolCalledData) {
	attrs = append(attrs, attribute.String("orbit.tool", d.Name), attribute.Int("orbit.agent.turn", d.Turn), attribute.Int("orbit.tool.result_size", d.ResultSize))
	if d.AgentTool != "" {
		attrs = append(attrs, attribute.String("orbit.tool.agent_tool", d.AgentTool))
	}
	_, span := t.tr.Start(t.under(ctx, r, parent, id), "tool "+d.Name,
		trace.WithTimestamp(ev.Time.Add(-time.Duration(d.DurationMS)*time.Millisecond)), trace.WithAttributes(attrs...))
	if d.Error != "" {
		span.SetStatus(codes.Error, d.Error)
	}
	span.End(trace.WithTimestamp(ev.Time))
}

// cliSpan is a CLI agent's process (Claude Code, Codex) under its step,
// with the usage and cost it reported.
func (t *Tracer) cliSpan(ctx context.Context, r *runState, ev events.Event, d events.CLIInvocationFinishedData) {
	attrs := append(t.base(ev, r),
		attribute.String("orbit.step", ev.StepKey),
		attribute.Int("orbit.attempt", d.Attempt),
		attribute.String("orbit.agent.executor", d.Executor),
		attribute.String("gen_ai.request.model", d.Model),
		attribute.Int("process.exit.code", d.ExitCode),
		attribute.Int64("gen_ai.usage.input_tokens", d.Usage.InputTokens),
		attribute.Int64("gen_ai.usage.output_tokens", d.Usage.OutputTokens),
		attribute.Float64("orbit.agent.cost_usd", d.CostUSD),
		attribute.Bool("orbit.agent.usage_in_turns", d.UsageInTurns),
	)
	_, span := t.tr.Start(t.under(ctx, r, StepSpanID(ev.RunID, ev.StepKey, d.Attempt), spanID("orbit.cli", ev.ID)), "cli "+d.Executor,
		trace.WithTimestamp(ev.Time.Add(-time.Duration(d.DurationMS)*time.Millisecond)), trace.WithAttributes(attrs...))
	if d.ExitCode != 0 || d.TimedOut || d.Signal != "" {
		span.SetStatus(codes.Error, "exit "+strconv.Itoa(d.ExitCode)+" "+d.Signal)
	}
	span.End(trace.WithTimestamp(ev.Time))
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
