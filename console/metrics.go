package console

import (
	"context"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/orbitrun/orbit/engine"
	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/projector"
)

// snapshot is what one scrape reports: the metrics view (what orbit
// metrics prints), the engine's info and the runs not finished yet, all as
// of at least the log's end when the scrape began.
type snapshot struct {
	seq     uint64
	info    engine.InfoReply
	metrics projector.Metrics
	active  []projector.RunView
	queues  []events.QueueDepth
	// batches and batched are this engine's group commits: atomic batches
	// and the events they held.
	batches, batched uint64
	// routines are the project's routines and their state.
	routines engine.Routines
	// jobsPaused are the paused jobs (orbit job pause).
	jobsPaused []engine.PausedJob
}

// metrics serves the Prometheus text format.
func (s *Server) metrics(w http.ResponseWriter, r *http.Request) {
	snap, err := s.snapshot(r.Context())
	if err != nil {
		http.Error(w, "orbit metrics unavailable: "+err.Error(), http.StatusServiceUnavailable)
		return
	}
	reg := prometheus.NewPedanticRegistry()
	if err := reg.Register(snap); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.HTTPErrorOnError}).ServeHTTP(w, r)
}

func (s *Server) snapshot(ctx context.Context) (*snapshot, error) {
	seq, err := s.lastSeq(ctx)
	if err != nil {
		return nil, err
	}
	snap := &snapshot{seq: seq}
	if err := s.request(ctx, engine.EndpointMetrics, engine.MetricsQuery{MinSeq: seq}, &snap.metrics); err != nil {
		return nil, err
	}
	// After the metrics: the views have applied at least seq by now.
	if err := s.request(ctx, engine.EndpointInfo, nil, &snap.info); err != nil {
		return nil, err
	}
	q := engine.RunsQuery{States: []string{events.StatePending, events.StateRunning}, MinSeq: seq}
	if err := s.request(ctx, engine.EndpointRuns, q, &snap.active); err != nil {
		return nil, err
	}
	// Queue depths are the server's state of the command queue, not a
	// view: they come from the log connection itself.
	if snap.queues, err = s.log.QueueDepths(ctx); err != nil {
		return nil, err
	}
	snap.batches, snap.batched = s.log.GroupCommits()
	if err := s.request(ctx, engine.EndpointJobsPaused, nil, &snap.jobsPaused); err != nil {
		return nil, err
	}
	if err := s.request(ctx, engine.EndpointRoutines, nil, &snap.routines); err != nil {
		return nil, err
	}
	return snap, nil
}

// The metrics the console exports.
var (
	descRuns = prometheus.NewDesc("orbit_runs", "Runs by job and state: finished runs from the metrics view, pending and running runs from the runs view.",
		[]string{"job", "state"}, nil)
	descPaused = prometheus.NewDesc("orbit_runs_paused", "Live runs that are paused (orbit run pause), by job.",
		[]string{"job"}, nil)
	descJobsPaused = prometheus.NewDesc("orbit_jobs_paused", "Jobs that are paused (orbit job pause): their new runs queue.",
		nil, nil)
	descRoutineLast = prometheus.NewDesc("orbit_routine_last_fire_timestamp_seconds", "Tick of the last run a routine fired (0: none yet).",
		[]string{"routine"}, nil)
	descRoutineNext = prometheus.NewDesc("orbit_routine_next_fire_timestamp_seconds", "Next tick of a routine (0: paused, or never again).",
		[]string{"routine"}, nil)
	descRoutineFired = prometheus.NewDesc("orbit_routine_fired_total", "Ticks a routine fired a run for.",
		[]string{"routine"}, nil)
	descRoutineSkipped = prometheus.NewDesc("orbit_routine_skipped_total", "Ticks a routine skipped (overlap, missed, refused).",
		[]string{"routine"}, nil)
	descRoutinePaused = prometheus.NewDesc("orbit_routine_paused", "1 while a routine is paused.",
		[]string{"routine"}, nil)
	descRunSeconds = prometheus.NewDesc("orbit_run_duration_seconds_total", "Total duration of the finished runs of a job.",
		[]string{"job"}, nil)
	descSteps = prometheus.NewDesc("orbit_steps_total", "Finished step attempts by job, step id and state.",
		[]string{"job", "step", "state"}, nil)
	descStepSeconds = prometheus.NewDesc("orbit_step_duration_seconds", "Durations of finished step attempts by job and step id.",
		[]string{"job", "step"}, nil)
	descStepTypeSeconds = prometheus.NewDesc("orbit_step_duration_seconds_by_type", "Durations of finished step attempts by the activity type their step.started recorded.",
		[]string{"activity_type"}, nil)
	descStepMax = prometheus.NewDesc("orbit_step_duration_max_seconds", "Longest finished step attempt by job and step id.",
		[]string{"job", "step"}, nil)
	descEvents = prometheus.NewDesc("orbit_events_appended", "Stream sequence of the last event in the log: every event ever appended.",
		nil, nil)
	descApplied = prometheus.NewDesc("orbit_events_applied", "Stream sequence of the last event the views have applied.",
		nil, nil)
	descBusy = prometheus.NewDesc("orbit_engine_busy_runs", "Runs the engine's orchestrator is driving now.",
		nil, nil)
	descConsumers = prometheus.NewDesc("orbit_event_consumers", "Consumers of the event stream.",
		nil, nil)
	descStoreFull = prometheus.NewDesc("orbit_event_store_full", "1 while the event store refuses writes.",
		nil, nil)
	descBatches = prometheus.NewDesc("orbit_append_batches_total", "Atomic batches this engine's group commit wrote (strict mode): each one fsync for all its events.",
		nil, nil)
	descBatched = prometheus.NewDesc("orbit_append_batched_events_total", "Events and commands this engine wrote in atomic batches; divided by orbit_append_batches_total, the mean batch size.",
		nil, nil)
	descQueuePending = prometheus.NewDesc("orbit_queue_pending", "Commands stored for a consumer of the command queue and not delivered yet.",
		[]string{"consumer"}, nil)
	descQueueAckPending = prometheus.NewDesc("orbit_queue_ack_pending", "Commands delivered to a consumer of the command queue and not acknowledged yet.",
		[]string{"consumer"}, nil)
	descTurns = prometheus.NewDesc("orbit_model_turns_total", "Agent turns by model.",
		[]string{"model"}, nil)
	descInvocations = prometheus.NewDesc("orbit_model_invocations_total", "CLI agent invocations by model.",
		[]string{"model"}, nil)
	descTokens = prometheus.NewDesc("orbit_tokens_total", "Tokens by model and kind (input, output, cache_read, cache_write).",
		[]string{"model", "kind"}, nil)
	descCost = prometheus.NewDesc("orbit_cost_usd_total", "Cost in US dollars that CLI agent invocations reported, by model.",
		[]string{"model"}, nil)
	descToolCalls = prometheus.NewDesc("orbit_tool_calls_total", "Agent tool calls by tool and result (ok, error, denied).",
		[]string{"tool", "result"}, nil)
	descAttempts = prometheus.NewDesc("orbit_groundhog_attempts_total", "Groundhog attempts by task, checkpoint and event (started, committed, rewound, interrupted, abandoned).",
		[]string{"task", "checkpoint", "event"}, nil)
	descVerifier = prometheus.NewDesc("orbit_verifier_results_total", "Verifier results by criterion kind, anti (true for anti-criteria) and outcome.",
		[]string{"kind", "anti", "outcome"}, nil)
	descRewinds = prometheus.NewDesc("orbit_groundhog_rewinds_total", "Groundhog rewinds by task.",
		[]string{"task"}, nil)
	descAbandons = prometheus.NewDesc("orbit_groundhog_abandons_total", "Groundhog abandons by task.",
		[]string{"task"}, nil)
)

// Describe sends nothing: the metrics are unchecked, since their label
// values come from the views.
func (*snapshot) Describe(chan<- *prometheus.Desc) {}

// Collect sends the snapshot as constant metrics.
func (snap *snapshot) Collect(ch chan<- prometheus.Metric) {
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	counter := func(d *prometheus.Desc, v int64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
	}
	m := &snap.metrics

	runs := map[[2]string]int64{}
	for job, x := range m.Jobs {
		for state, n := range x.States {
			runs[[2]string{job, state}] += n
		}
		ch <- prometheus.MustNewConstMetric(descRunSeconds, prometheus.CounterValue, float64(x.TotalDurationMS)/1000, job)
	}
	for _, r := range snap.active {
		runs[[2]string{r.Job, r.State}]++
	}
	for k, n := range runs {
		gauge(descRuns, float64(n), k[0], k[1])
	}
	paused := map[string]int{}
	for _, r := range snap.active {
		if r.Paused {
			paused[r.Job]++
		}
	}
	for job, n := range paused {
		gauge(descPaused, float64(n), job)
	}
	gauge(descJobsPaused, float64(len(snap.jobsPaused)))
	for _, rs := range snap.routines.Routines {
		name := rs.Routine.Name
		gauge(descRoutineLast, unixSeconds(rs.State.LastFire), name)
		gauge(descRoutineNext, unixSeconds(rs.Next), name)
		counter(descRoutineFired, int64(rs.State.Fired), name)
		counter(descRoutineSkipped, int64(rs.State.Skipped), name)
		p := 0.0
		if rs.State.Paused {
			p = 1
		}
		gauge(descRoutinePaused, p, name)
	}

	for job, steps := range m.Steps {
		for step, x := range steps {
			for state, n := range x.States {
				counter(descSteps, n, job, step, state)
			}
			ch <- prometheus.MustNewConstHistogram(descStepSeconds, uint64(x.Count), float64(x.TotalDurationMS)/1000, nil, job, step)
			gauge(descStepMax, float64(x.MaxDurationMS)/1000, job, step)
		}
	}

	for typ, x := range m.ActivityTypes {
		buckets := make(map[float64]uint64, len(x.Buckets))
		for _, b := range x.Buckets {
			buckets[float64(b.LeMS)/1000] = uint64(b.Count)
		}
		ch <- prometheus.MustNewConstHistogram(descStepTypeSeconds, uint64(x.Count), float64(x.TotalDurationMS)/1000, buckets, typ)
	}

	gauge(descEvents, float64(snap.seq))
	gauge(descApplied, float64(snap.info.Applied))
	gauge(descBusy, float64(snap.info.Busy))
	gauge(descConsumers, float64(snap.info.Consumers))
	full := 0.0
	if snap.info.StoreFull != "" {
		full = 1
	}
	gauge(descStoreFull, full)
	counter(descBatches, int64(snap.batches))
	counter(descBatched, int64(snap.batched))
	for _, q := range snap.queues {
		gauge(descQueuePending, float64(q.Pending), q.Consumer)
		gauge(descQueueAckPending, float64(q.AckPending), q.Consumer)
	}

	for model, x := range m.Models {
		counter(descTurns, x.Turns, model)
		counter(descInvocations, x.Invocations, model)
		counter(descTokens, x.Usage.InputTokens, model, "input")
		counter(descTokens, x.Usage.OutputTokens, model, "output")
		counter(descTokens, x.Usage.CacheReadTokens, model, "cache_read")
		counter(descTokens, x.Usage.CacheWriteTokens, model, "cache_write")
		ch <- prometheus.MustNewConstMetric(descCost, prometheus.CounterValue, x.CostUSD(), model)
	}
	for tool, x := range m.Tools {
		counter(descToolCalls, x.Calls-x.Errors, tool, "ok")
		counter(descToolCalls, x.Errors, tool, "error")
		counter(descToolCalls, x.Denials, tool, "denied")
	}
	for task, cps := range m.Checkpoints {
		for cp, x := range cps {
			counter(descAttempts, x.Started, task, cp, "started")
			counter(descAttempts, x.Committed, task, cp, "committed")
			counter(descAttempts, x.Rewound, task, cp, "rewound")
			counter(descAttempts, x.Interrupted, task, cp, "interrupted")
			counter(descAttempts, x.Abandoned, task, cp, "abandoned")
		}
	}
	for kind, x := range m.Verifier {
		for anti, o := range map[bool]projector.OutcomeCounts{false: x.Criteria, true: x.AntiCriteria} {
			a := strconv.FormatBool(anti)
			counter(descVerifier, o.Pass, kind, a, "pass")
			counter(descVerifier, o.Fail, kind, a, "fail")
			counter(descVerifier, o.Skipped, kind, a, "skipped")
		}
	}
	for task, x := range m.Tasks {
		counter(descRewinds, x.Rewinds, task)
		counter(descAbandons, x.Abandons, task)
	}
}

// unixSeconds is t as a Prometheus timestamp value, 0 for none.
func unixSeconds(t time.Time) float64 {
	if t.IsZero() {
		return 0
	}
	return float64(t.UnixNano()) / 1e9
}
