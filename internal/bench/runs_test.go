package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/orbitrun/orbit/assets"
	orbitengine "github.com/orbitrun/orbit/engine"
	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/executor"
)

// BenchmarkConcurrentRuns is issue 29's W3 on an engine (orbitengine.Open: the
// API, admission, the orchestrator, the worker, the projector) on a fresh
// root: 200 runs of a job of three deterministic echo steps, submitted at
// once through the API (runs.submit, as `orbit job run` does) by a client
// that waits for each run's run.finished. Then the events those runs wrote
// are published raw on the same server, 200 publishers at once, each one
// run's events in order, awaiting each: the floor of what the runs cost in
// the log. It reports runs/s of both and their ratio, the process's CPU
// time of both per run (the server's included: it runs in the process)
// and their ratio, which other load on the machine moves far less, and the
// requests to the server's JetStream API per run. ORBIT_BENCH_PROFILE
// profiles the runs (see profilePart).
func BenchmarkConcurrentRuns(b *testing.B) {
	const runs = 200
	job := threeSteps(b, runs)
	for _, durability := range durabilities {
		b.Run(durability, func(b *testing.B) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			root := b.TempDir()
			e, err := orbitengine.Open(ctx, orbitengine.Config{Root: root, Listen: "127.0.0.1:0", Durability: durability})
			if err != nil {
				b.Fatal(err)
			}
			served := make(chan error, 1)
			go func() { served <- e.Run(ctx) }()
			defer func() { cancel(); <-served; e.Close() }()
			info := awaitServing(b, root, served)
			client, err := events.Dial(ctx, info.URL, events.Config{
				NKeySeedFile: events.CredsFile(orbitengine.CredsDir(root), events.IdentityClient),
				LogKeyFile:   orbitengine.LogKeyPath(root), Name: "bench", Redactor: &events.Redactor{},
			})
			if err != nil {
				b.Fatal(err)
			}
			defer client.Close()
			key, err := nats.NkeyOptionFromSeed(events.CredsFile(orbitengine.CredsDir(root), events.IdentityEngine))
			if err != nil {
				b.Fatal(err)
			}
			nc, err := nats.Connect(info.URL, key)
			if err != nil {
				b.Fatal(err)
			}
			defer nc.Close()
			js, err := jetstream.New(nc)
			if err != nil {
				b.Fatal(err)
			}
			raw := rawStream(b, js)
			finished, err := client.Follow(ctx, events.FollowOptions{Filters: []string{events.TypeFilter(events.AggregateRun, events.RunFinished)}})
			if err != nil {
				b.Fatal(err)
			}
			defer finished.Stop()

			batch := func(n int) ([]string, time.Duration) {
				ids := make([]string, n)
				reqs := make([]*executor.RunRequest, n)
				for i := range reqs {
					if reqs[i], err = executor.NewRunRequest(job, nil, "bench"); err != nil {
						b.Fatal(err)
					}
					ids[i] = reqs[i].RunID
				}
				start := time.Now()
				errs := make(chan error, n)
				for _, req := range reqs {
					go func() { errs <- client.Request(ctx, orbitengine.EndpointSubmit, req, &orbitengine.Submitted{}) }()
				}
				for range n {
					if err := <-errs; err != nil {
						b.Fatal(err)
					}
				}
				for range n {
					ev := <-finished.Events()
					var fin events.RunFinishedData
					if err := ev.Decode(&fin); err != nil || fin.State != events.StateSuccess {
						b.Fatalf("run %s: %s %v", ev.RunID, fin.State, err)
					}
				}
				return ids, time.Since(start)
			}
			batch(runs / 10)
			var runTime, rawTime, runCPU, rawCPU time.Duration
			var written int
			var calls uint64
			b.ResetTimer()
			for range b.N {
				stop := profilePart(b, "runs-"+durability)
				api, cpu := apiCalls(b, js), cpuTime()
				ids, took := batch(runs)
				runCPU += cpuTime() - cpu
				calls += apiCalls(b, js) - api
				stop()
				runTime += took
				byRun := make([][]*nats.Msg, len(ids))
				for i, id := range ids {
					hist, err := e.Log().Read(ctx, events.FollowOptions{Filters: []string{events.RunFilter(id)}})
					if err != nil {
						b.Fatal(err)
					}
					written += len(hist)
					for _, ev := range hist {
						ev.Seq = 0
						ev.RunID = "raw" + id
						body, _ := json.Marshal(ev)
						subject, _ := ev.Subject()
						byRun[i] = append(byRun[i], &nats.Msg{Subject: raw(subject), Data: body})
					}
				}
				start, cpu := time.Now(), cpuTime()
				errs := make(chan error, len(byRun))
				var wg sync.WaitGroup
				for i, msgs := range byRun {
					wg.Go(func() {
						for j, m := range msgs {
							if _, err := js.PublishMsg(ctx, m, jetstream.WithMsgID("raw"+ids[i]+strconv.Itoa(j))); err != nil {
								errs <- err
								return
							}
						}
					})
				}
				wg.Wait()
				rawTime += time.Since(start)
				rawCPU += cpuTime() - cpu
				close(errs)
				for err := range errs {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			total := float64(b.N * runs)
			b.ReportMetric(float64(written)/total, "events/run")
			b.ReportMetric(total/runTime.Seconds(), "runs/s")
			b.ReportMetric(total/rawTime.Seconds(), "raw-runs/s")
			b.ReportMetric(runTime.Seconds()/rawTime.Seconds(), "ratio")
			b.ReportMetric(runCPU.Seconds()*1e3/total, "cpu-ms/run")
			b.ReportMetric(rawCPU.Seconds()*1e3/total, "raw-cpu-ms/run")
			b.ReportMetric(runCPU.Seconds()/rawCPU.Seconds(), "cpu-ratio")
			b.ReportMetric(float64(calls)/total, "api-calls/run")
		})
	}
}

// apiCalls is how many requests the server's JetStream API has answered
// so far: what reads besides feeds cost the server (a message get, a
// consumer created or deleted, a stream's info).
func apiCalls(b *testing.B, js jetstream.JetStream) uint64 {
	b.Helper()
	info, err := js.AccountInfo(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	return info.API.Total
}

// threeSteps is W3's job: three deterministic echo steps one after
// another, with maxActive of its runs at once (the default, one, would
// queue them one behind another).
func threeSteps(b *testing.B, maxActive int) *assets.Job {
	b.Helper()
	yaml := fmt.Sprintf("schemaVersion: 2\nkind: Job\nmetadata: {name: three}\nspec:\n  max_active_runs: %d\n  steps:\n", maxActive)
	for i := range 3 {
		yaml += fmt.Sprintf("    - id: s%d\n      spec: {type: deterministic, action: echo, config: {step: %d}}\n", i, i)
	}
	job, err := assets.ParseJob("three.yaml", []byte(yaml), nil)
	if err != nil {
		b.Fatal(err)
	}
	return job
}

// awaitServing waits until the engine on root serves, as its engine.json
// says.
func awaitServing(b *testing.B, root string, served <-chan error) *orbitengine.Info {
	b.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		info, err := orbitengine.ReadInfo(root)
		if err == nil {
			return info
		}
		select {
		case err := <-served:
			b.Fatal(errors.Join(errors.New("the engine stopped before it served"), err))
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			b.Fatalf("the engine did not serve within a minute: %v", err)
		}
	}
}
