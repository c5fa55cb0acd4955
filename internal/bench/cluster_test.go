package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/orbitrun/orbit/assets"
	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/executor"
	"github.com/orbitrun/orbit/internal/testkit"
)

// clusterRuns is the number of short runs each BenchmarkClusterThroughput
// case submits at once.
const clusterRuns = 20

// clusterRunTimeout bounds how long the runs of one case may take.
const clusterRunTimeout = 3 * time.Minute

// shortJob is the run the cluster benchmark submits: an echo, a shell
// step, an echo.
const shortJob = `schemaVersion: 2
kind: Job
metadata: {name: short}
spec:
  steps:
    - id: first
      spec: {type: deterministic, action: echo, config: {step: 1}}
    - id: shell
      spec: {type: shell, program: sh, args: ["-c", "printf ok"], allowed_programs: [sh]}
    - id: last
      spec: {type: deterministic, action: echo, config: {step: 3}}
`

// BenchmarkClusterThroughput submits clusterRuns short runs at once to a
// three-node cluster (every stream at three replicas) served by 1, 2 and 3
// `orbit serve --nats-url` engines, and reports runs/s and events/s from
// the first submission to the last run.finished, with the ratio against
// one engine. Run it with -benchtime 1x: each iteration is one batch on a
// fresh cluster.
func BenchmarkClusterThroughput(b *testing.B) {
	testkit.Binary(b)
	job, err := assets.ParseJob("short.yaml", []byte(shortJob), nil)
	if err != nil {
		b.Fatal(err)
	}
	var oneEngine float64
	for engines := 1; engines <= testkit.ClusterSize; engines++ {
		b.Run(fmt.Sprintf("engines=%d", engines), func(b *testing.B) {
			var runs, evs int
			var wall time.Duration
			for range b.N {
				n, e, d := clusterBatch(b, job, engines)
				runs, evs, wall = runs+n, evs+e, wall+d
			}
			runRate := float64(runs) / wall.Seconds()
			b.ReportMetric(runRate, "runs/s")
			b.ReportMetric(float64(evs)/wall.Seconds(), "events/s")
			if engines == 1 {
				oneEngine = runRate
			}
			if oneEngine > 0 {
				b.ReportMetric(runRate/oneEngine, "ratio-vs-1-engine")
			}
		})
	}
}

// clusterBatch starts a cluster and engines on it, submits clusterRuns runs
// of job and waits until each has finished successfully. It returns the
// runs, the events appended meanwhile and the wall time, timed from the
// first submission.
func clusterBatch(b *testing.B, job *assets.Job, engines int) (int, int, time.Duration) {
	b.StopTimer()
	ctx, cancel := context.WithTimeout(context.Background(), clusterRunTimeout)
	defer cancel()
	c := testkit.StartCluster(b, filepath.Join(b.TempDir(), "creds"))
	key := filepath.Join(b.TempDir(), "log.key")
	var engs []*testkit.Engine
	defer func() {
		for _, e := range engs {
			e.Stop()
		}
		// What slowed a batch down (a step result dropped and
		// redelivered after its ack wait, say) is in the engines' logs.
		for _, e := range engs {
			for _, line := range strings.Split(e.Stderr(), "\n") {
				if strings.Contains(line, "level=WARN") || strings.Contains(line, "level=ERROR") {
					b.Log(line)
				}
			}
		}
	}()
	for range engines {
		p := testkit.ClusterProject(b, c, key)
		engs = append(engs, testkit.StartEngine(b, p))
	}
	l, err := events.Dial(ctx, c.URLs(), events.Config{
		NKeySeedFile: c.Creds.File(events.IdentityEngine),
		LogKeyFile:   key,
		Redactor:     &events.Redactor{},
		Name:         "bench",
	})
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	js, err := jetstream.New(c.Connect())
	if err != nil {
		b.Fatal(err)
	}
	stream, err := js.Stream(ctx, events.EventsStream)
	if err != nil {
		b.Fatal(err)
	}
	before := stream.CachedInfo().State.LastSeq
	msgs := stream.CachedInfo().State.Msgs
	ids, all := map[string]bool{}, map[string]bool{}
	reqs := make([]*executor.RunRequest, clusterRuns)
	for i := range reqs {
		if reqs[i], err = executor.NewRunRequest(job, nil, "bench"); err != nil {
			b.Fatal(err)
		}
		ids[reqs[i].RunID], all[reqs[i].RunID] = true, true
	}

	b.StartTimer()
	start := time.Now()
	for _, req := range reqs {
		if err := executor.Submit(ctx, l, req); err != nil {
			b.Fatal(err)
		}
	}
	var finished jetstream.Consumer
	for done := 0; done < len(reqs); {
		if ctx.Err() != nil {
			var open []string
			for id := range ids {
				open = append(open, id)
			}
			b.Fatalf("%d of %d runs finished within %s; not finished: %s", done, len(reqs), clusterRunTimeout, strings.Join(open, " "))
		}
		// A consumer that fails (a JetStream request with no responder
		// while the cluster is busy) is made again from the first event
		// of the batch; the runs already counted are skipped.
		if finished == nil {
			if finished, err = js.OrderedConsumer(ctx, events.EventsStream, jetstream.OrderedConsumerConfig{
				FilterSubjects: []string{events.TypeFilter(events.AggregateRun, events.RunFinished)},
				DeliverPolicy:  jetstream.DeliverByStartSequencePolicy,
				OptStartSeq:    before + 1,
			}); err != nil {
				finished = nil
				time.Sleep(100 * time.Millisecond)
				continue
			}
		}
		msg, err := finished.Next(jetstream.FetchContext(ctx))
		if err != nil {
			finished = nil
			continue
		}
		var ev events.Event
		if err := json.Unmarshal(msg.Data(), &ev); err != nil {
			b.Fatal(err)
		}
		if !ids[ev.RunID] {
			continue
		}
		delete(ids, ev.RunID)
		var data events.RunFinishedData
		if err := ev.Decode(&data); err != nil {
			b.Fatal(err)
		}
		if data.State != events.StateSuccess {
			b.Fatalf("run %s ended %s: %+v", ev.RunID, data.State, data.Error)
		}
		done++
	}
	wall := time.Since(start)
	b.StopTimer()

	info, err := stream.Info(ctx)
	if err != nil {
		b.Fatal(err)
	}
	if n, err := c.StreamReplicas(ctx, events.EventsStream); err != nil || n != testkit.ClusterSize {
		b.Fatalf("%s at %d replicas (%v), want %d", events.EventsStream, n, err, testkit.ClusterSize)
	}
	b.Logf("%d engine(s): %d runs in %s (%s)", engines, len(reqs), wall.Round(time.Millisecond), strings.Join(enginesOf(b, js, all), ", "))
	return len(reqs), int(info.State.Msgs - msgs), wall
}

// enginesOf counts, per engine, the runs of ids whose run.started it
// recorded: how the runs were shared.
func enginesOf(b *testing.B, js jetstream.JetStream, ids map[string]bool) []string {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cons, err := js.OrderedConsumer(ctx, events.EventsStream, jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{events.TypeFilter(events.AggregateRun, events.RunStarted)},
	})
	if err != nil {
		b.Fatal(err)
	}
	counts := map[string]int{}
	var order []string
	seen := 0
	for seen < len(ids) {
		msg, err := cons.Next(jetstream.FetchMaxWait(5 * time.Second))
		if err != nil {
			break
		}
		var ev events.Event
		if json.Unmarshal(msg.Data(), &ev) != nil || !ids[ev.RunID] {
			continue
		}
		var data events.RunStartedData
		if ev.Decode(&data) != nil {
			continue
		}
		seen++
		if counts[data.Engine] == 0 {
			order = append(order, data.Engine)
		}
		counts[data.Engine]++
	}
	var out []string
	for _, e := range order {
		out = append(out, fmt.Sprintf("%d runs started by %s", counts[e], e))
	}
	if missing := len(ids) - seen; missing > 0 {
		out = append(out, fmt.Sprintf("%d run.started not read within 5 s", missing))
	}
	return out
}
