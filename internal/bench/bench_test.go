package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/orbitrun/orbit/assets"
	"github.com/orbitrun/orbit/events"
)

var durabilities = []string{events.DurabilityStrict, events.DurabilityRelaxed}

// openLog starts an embedded log listening on a free loopback port and
// returns it with a raw JetStream client connected the same way.
func openLog(b *testing.B, durability string) (*events.Log, jetstream.JetStream) {
	b.Helper()
	ctx := context.Background()
	engineLog, err := events.Open(ctx, events.Config{
		StoreDir:   filepath.Join(b.TempDir(), "nats"),
		Listen:     "127.0.0.1:0",
		Durability: durability,
		Redactor:   &events.Redactor{},
	})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { engineLog.Close() })
	key, err := nats.NkeyOptionFromSeed(events.CredsFile(engineLog.CredsDir(), events.IdentityEngine))
	if err != nil {
		b.Fatal(err)
	}
	nc, err := nats.Connect(engineLog.ClientURL(), key)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		b.Fatal(err)
	}
	return engineLog, js
}

// rawPrefix begins the subjects of a benchmark's raw baseline: an events
// subject under it is in the stream rawStream makes.
const rawPrefix = "raw."

// rawStream makes, on the server js speaks to, a stream with the events
// stream's configuration for the subjects under rawPrefix, and returns
// the subject a raw copy of an event on subject goes to. The raw baseline
// of a benchmark that runs an engine goes there: published into the
// events stream, its unsigned copies reached the engine's feeds, which
// rejected each and recorded the rejection, work that was charged to the
// baseline and to the runs that followed it.
func rawStream(b *testing.B, js jetstream.JetStream) func(subject string) string {
	b.Helper()
	ctx := context.Background()
	s, err := js.Stream(ctx, events.EventsStream)
	if err != nil {
		b.Fatal(err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		b.Fatal(err)
	}
	cfg := info.Config
	cfg.Name, cfg.Subjects = "BENCH_RAW", []string{rawPrefix + ">"}
	if _, err := js.CreateStream(ctx, cfg); err != nil {
		b.Fatal(err)
	}
	return func(subject string) string { return rawPrefix + subject }
}

// client dials the log over TCP, as the raw client does, so that both sides
// of a comparison pay for the same connection. It signs in as the engine,
// which alone may append.
func client(b *testing.B, engineLog *events.Log) *events.Log {
	b.Helper()
	seed := events.CredsFile(engineLog.CredsDir(), events.IdentityEngine)
	l, err := events.Dial(context.Background(), engineLog.ClientURL(), events.Config{
		Redactor: &events.Redactor{}, NKeySeedFile: seed, Durability: engineLog.Durability()})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { l.Close() })
	return l
}

func stepFinished(i int) (events.Event, events.StepFinishedData) {
	key := "step_" + strconv.Itoa(i)
	return events.Event{
			ID:      events.DecisionID(events.StepFinished, "RUN", key, "1"),
			Type:    events.StepFinished,
			RunID:   "RUN",
			Job:     "bench",
			StepKey: key,
		}, events.StepFinishedData{
			Attempt: 1, State: events.StateSuccess, DurationMS: 3,
			Output: map[string]any{"message": "hello from step " + key, "n": i},
		}
}

// BenchmarkAppend appends b.N step.finished events through events.Append
// and publishes the same envelopes raw, interleaved in chunks so that both
// see the same machine, and reports both rates and their ratio.
func BenchmarkAppend(b *testing.B) {
	for _, durability := range durabilities {
		b.Run(durability, func(b *testing.B) {
			engineLog, js := openLog(b, durability)
			l := client(b, engineLog)
			ctx := context.Background()
			var orbitTime, rawTime time.Duration
			const chunk = 50
			b.ResetTimer()
			for done := 0; done < b.N; done += chunk {
				n := min(chunk, b.N-done)
				msgs := make([]*nats.Msg, n)
				ids := make([]string, n)
				for i := range msgs {
					ev, data := stepFinished(done + i)
					ev.RunID = "raw"
					ev.ID = events.DecisionID(events.StepFinished, "raw", ev.StepKey, "1")
					ev.Time = time.Now().UTC()
					ev.Data, _ = json.Marshal(data)
					body, _ := json.Marshal(ev)
					subject, _ := ev.Subject()
					msgs[i] = &nats.Msg{Subject: subject, Data: body}
					ids[i] = ev.ID
				}
				start := time.Now()
				for i, m := range msgs {
					if _, err := js.PublishMsg(ctx, m, jetstream.WithMsgID(ids[i])); err != nil {
						b.Fatal(err)
					}
				}
				rawTime += time.Since(start)

				start = time.Now()
				for i := done; i < done+n; i++ {
					ev, data := stepFinished(i)
					ev.RunID = "orbit"
					ev.ID = events.DecisionID(events.StepFinished, "orbit", ev.StepKey, "1")
					if _, err := l.Append(ctx, ev, data); err != nil {
						b.Fatal(err)
					}
				}
				orbitTime += time.Since(start)

			}
			b.StopTimer()
			orbitRate := float64(b.N) / orbitTime.Seconds()
			rawRate := float64(b.N) / rawTime.Seconds()
			b.ReportMetric(orbitRate, "orbit-events/s")
			b.ReportMetric(rawRate, "raw-events/s")
			b.ReportMetric(orbitRate/rawRate, "ratio(goal≥0.9)")
		})
	}
}

// BenchmarkEchoJob runs a job of 200 sequential echo steps end to end on an
// engine (orchestrator and worker on the embedded log), then appends the
// events that run wrote, raw, one by one with their acks: the job's wall
// time over that raw cost is the engine's overhead.
func BenchmarkEchoJob(b *testing.B) {
	job := echoJob(b, 200)
	for _, durability := range durabilities {
		b.Run(durability, func(b *testing.B) {
			engineLog, js := openLog(b, durability)
			raw := rawStream(b, js)
			engine(b, engineLog)
			ctx := context.Background()

			var jobTime, rawTime, jobCPU, rawCPU time.Duration
			var written int
			b.ResetTimer()
			for range b.N {
				d, cpu, hist := runJob(b, engineLog, job, nil)
				jobTime += d
				jobCPU += cpu
				runID := hist[0].RunID
				written += len(hist)
				msgs := make([]*nats.Msg, len(hist))
				for i, ev := range hist {
					ev.Seq = 0
					ev.RunID = "raw" + runID
					body, _ := json.Marshal(ev)
					subject, _ := ev.Subject()
					msgs[i] = &nats.Msg{Subject: raw(subject), Data: body}
				}
				start, cpu := time.Now(), cpuTime()
				for i, m := range msgs {
					if _, err := js.PublishMsg(ctx, m, jetstream.WithMsgID(runID+strconv.Itoa(i))); err != nil {
						b.Fatal(err)
					}
				}
				rawTime += time.Since(start)
				rawCPU += cpuTime() - cpu
			}
			b.StopTimer()
			b.ReportMetric(float64(written)/float64(b.N), "events/run")
			b.ReportMetric(jobTime.Seconds()*1000/float64(b.N), "job-ms")
			b.ReportMetric(rawTime.Seconds()*1000/float64(b.N), "raw-ms")
			b.ReportMetric(jobTime.Seconds()/rawTime.Seconds(), "ratio(goal≤1.3)")
			b.ReportMetric(jobCPU.Seconds()*1000/float64(b.N), "job-cpu-ms")
			b.ReportMetric(rawCPU.Seconds()*1000/float64(b.N), "raw-cpu-ms")
			b.ReportMetric(jobCPU.Seconds()/rawCPU.Seconds(), "cpu-ratio")
		})
	}
}

func echoJob(b *testing.B, steps int) *assets.Job {
	b.Helper()
	yaml := "schemaVersion: 2\nkind: Job\nmetadata: {name: echo200}\nspec:\n  default_input: {n: 0}\n  steps:\n"
	for i := range steps {
		yaml += fmt.Sprintf("    - id: s%d\n      spec: {type: deterministic, action: echo, config: {step: %d}}\n", i, i)
	}
	job, err := assets.ParseJob("echo200.yaml", []byte(yaml), nil)
	if err != nil {
		b.Fatal(err)
	}
	return job
}
