package bench

import (
	"context"
	"encoding/json"
	"strconv"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/orbitrun/orbit/activity"
	"github.com/orbitrun/orbit/assets"
	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/executor"
)

// engine starts an orchestrator and a worker on engineLog until the
// benchmark ends.
func engine(b *testing.B, engineLog *events.Log) {
	b.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	b.Cleanup(cancel)
	orch := executor.NewOrchestrator(executor.Config{Log: engineLog, Root: b.TempDir()})
	worker := activity.NewWorker(activity.WorkerConfig{Log: engineLog})
	go func() { _ = worker.Run(ctx) }()
	go func() { _ = orch.Run(ctx) }()
}

// runJob runs job with input to its end and returns its wall time, the
// CPU time the process used meanwhile, and the events it wrote.
func runJob(b *testing.B, engineLog *events.Log, job *assets.Job, input any) (time.Duration, time.Duration, []events.Event) {
	b.Helper()
	ctx := context.Background()
	req, err := executor.NewRunRequest(job, input, "bench")
	if err != nil {
		b.Fatal(err)
	}
	feed, err := engineLog.Follow(ctx, events.FollowOptions{Filters: []string{
		events.EventSubject(events.AggregateRun, req.RunID, events.RunFinished)}})
	if err != nil {
		b.Fatal(err)
	}
	defer feed.Stop()
	start, cpu := time.Now(), cpuTime()
	if err := executor.Submit(ctx, engineLog, req); err != nil {
		b.Fatal(err)
	}
	<-feed.Events()
	elapsed, used := time.Since(start), cpuTime()-cpu
	hist, err := engineLog.Read(ctx, events.FollowOptions{Filters: []string{events.RunFilter(req.RunID)}})
	if err != nil {
		b.Fatal(err)
	}
	return elapsed, used, hist
}

// publishRaw publishes hist again under another run id, raw, from
// appenders concurrent publishers each waiting for its acks: the log's own
// cost of those events at the concurrency the engine had.
func publishRaw(b *testing.B, js jetstream.JetStream, raw func(string) string, hist []events.Event, appenders int) time.Duration {
	b.Helper()
	ctx := context.Background()
	msgs := make([]*nats.Msg, len(hist))
	ids := make([]string, len(hist))
	for i, ev := range hist {
		ev.Seq = 0
		ev.RunID = "raw" + ev.RunID
		ids[i] = ev.RunID + strconv.Itoa(i)
		body, _ := json.Marshal(ev)
		subject, _ := ev.Subject()
		msgs[i] = &nats.Msg{Subject: raw(subject), Data: body}
	}
	return concurrently(b, appenders, len(msgs), func(_, i int) error {
		_, err := js.PublishMsg(ctx, msgs[i], jetstream.WithMsgID(ids[i]))
		return err
	})
}

// BenchmarkFanOut runs a 400-item fan-out of echo workers, 64 at a time,
// on a strict and on a relaxed engine in the same run, and publishes the
// relaxed run's events raw from 64 publishers. It reports both wall times,
// strict over relaxed, and relaxed per item over the raw cost per item.
func BenchmarkFanOut(b *testing.B) {
	const items, workers = 400, 64
	yaml := `schemaVersion: 2
kind: Job
metadata: {name: fan400}
spec:
  steps:
    - id: fan
      fan_out:
        items: "{{ input.items }}"
        max_workers: ` + strconv.Itoa(workers) + `
        worker:
          id: w
          spec: {type: deterministic, action: echo, config: {item: "{{ item }}"}}
      fan_in: {join: {mode: all}}
`
	job, err := assets.ParseJob("fan400.yaml", []byte(yaml), nil)
	if err != nil {
		b.Fatal(err)
	}
	list := make([]int, items)
	for i := range list {
		list[i] = i
	}
	input := map[string]any{"items": list}
	strictLog, _ := openLog(b, events.DurabilityStrict)
	relaxedLog, js := openLog(b, events.DurabilityRelaxed)
	raw := rawStream(b, js)
	engine(b, strictLog)
	engine(b, relaxedLog)

	var strict, relaxed, rawTime, strictCPU, relaxedCPU, rawCPU time.Duration
	var written, bytes, startedBytes, finishedBytes int
	var batches, batched uint64
	b.ResetTimer()
	for range b.N {
		b0, e0 := strictLog.GroupCommits()
		d, cpu, _ := runJob(b, strictLog, job, input)
		strict += d
		strictCPU += cpu
		b1, e1 := strictLog.GroupCommits()
		batches, batched = batches+b1-b0, batched+e1-e0
		d, cpu, hist := runJob(b, relaxedLog, job, input)
		relaxed += d
		relaxedCPU += cpu
		written += len(hist)
		for _, ev := range hist {
			bytes += len(ev.Data)
			switch ev.Type {
			case events.StepStarted:
				startedBytes += len(ev.Data)
			case events.StepFinished:
				finishedBytes += len(ev.Data)
			}
		}
		cpu = cpuTime()
		rawTime += publishRaw(b, js, raw, hist, workers)
		rawCPU += cpuTime() - cpu
	}
	b.StopTimer()
	per := func(d time.Duration) float64 { return d.Seconds() * 1000 / float64(b.N) }
	b.ReportMetric(float64(written)/float64(b.N), "events/run")
	// What the relaxed run's events hold (their data): all of it, and its
	// step.started and step.finished events'.
	b.ReportMetric(float64(bytes)/float64(b.N), "event-bytes/run")
	b.ReportMetric(float64(startedBytes)/float64(b.N), "started-bytes/run")
	b.ReportMetric(float64(finishedBytes)/float64(b.N), "finished-bytes/run")
	b.ReportMetric(per(strict), "strict-ms")
	b.ReportMetric(per(relaxed), "relaxed-ms")
	b.ReportMetric(per(rawTime), "raw-relaxed-ms")
	b.ReportMetric(strict.Seconds()/relaxed.Seconds(), "strict/relaxed(goal≤1.3)")
	b.ReportMetric(relaxed.Seconds()/rawTime.Seconds(), "relaxed/raw(goal≤1.5)")
	b.ReportMetric(per(strictCPU), "strict-cpu-ms")
	b.ReportMetric(per(relaxedCPU), "relaxed-cpu-ms")
	b.ReportMetric(per(rawCPU), "raw-cpu-ms")
	b.ReportMetric(relaxedCPU.Seconds()/rawCPU.Seconds(), "relaxed/raw-cpu")
	// How the strict run's events were grouped: in atomic batches (how
	// many, of how many events on average), the rest one by one.
	b.ReportMetric(float64(batched)/float64(b.N), "strict-batched-events/run")
	if batches > 0 {
		b.ReportMetric(float64(batched)/float64(batches), "strict-events/batch")
	}
}
