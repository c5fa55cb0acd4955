package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/orbitrun/orbit/events"
)

// rawEnvelope encodes event i of run the way events.Append would, without
// signing or redaction: the bytes a raw publish of the same event carries.
func rawEnvelope(run string, i int) (*nats.Msg, string) {
	ev, data := stepFinished(i)
	ev.RunID = run
	ev.ID = events.DecisionID(events.StepFinished, run, ev.StepKey, "1")
	ev.Time = time.Now().UTC()
	ev.Data, _ = json.Marshal(data)
	body, _ := json.Marshal(ev)
	subject, _ := ev.Subject()
	return &nats.Msg{Subject: subject, Data: body, Header: nats.Header{}}, ev.ID
}

// concurrently runs n items split over c goroutines and returns the wall
// time; item gets the goroutine's index and the item's.
func concurrently(b *testing.B, c, n int, item func(g, i int) error) time.Duration {
	b.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, c)
	start := time.Now()
	for g := range c {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := g; i < n; i += c {
				if err := item(g, i); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
	return elapsed
}

// publishAtomic publishes msgs as one raw atomic batch and waits for its
// commit: the least a group commit of them can cost.
func publishAtomic(ctx context.Context, nc *nats.Conn, id string, msgs []*nats.Msg) error {
	for i, m := range msgs {
		m.Header.Set("Nats-Batch-Id", id)
		m.Header.Set("Nats-Batch-Sequence", strconv.Itoa(i+1))
		if i < len(msgs)-1 {
			if err := nc.PublishMsg(m); err != nil {
				return err
			}
		}
	}
	last := msgs[len(msgs)-1]
	last.Header.Set("Nats-Batch-Commit", "1")
	resp, err := nc.RequestMsgWithContext(ctx, last)
	if err != nil {
		return err
	}
	var ack struct {
		Error *jetstream.APIError `json:"error"`
		Count int                 `json:"count"`
	}
	if err := json.Unmarshal(resp.Data, &ack); err != nil {
		return err
	}
	if ack.Error != nil {
		return ack.Error
	}
	if ack.Count != len(msgs) {
		return fmt.Errorf("batch of %d committed as %d", len(msgs), ack.Count)
	}
	return nil
}

// BenchmarkGroupCommit appends b.N step.finished events from 1, 8 and 64
// concurrent appenders through events.Append (a client dialled over TCP),
// and publishes the same envelopes raw over TCP: as single acknowledged
// publishes from as many publishers, and (from more than one appender) as
// atomic batches of as many events as there are appenders, what a perfect
// group commit would send.
// It reports the three rates and Orbit's ratio to each.
func BenchmarkGroupCommit(b *testing.B) {
	for _, durability := range durabilities {
		for _, c := range []int{1, 8, 64} {
			b.Run(fmt.Sprintf("%s/appenders=%d", durability, c), func(b *testing.B) {
				engineLog, js := openLog(b, durability)
				l := client(b, engineLog)
				nc := js.Conn()
				ctx := context.Background()
				n := b.N
				b.ResetTimer()

				rawSingle := concurrently(b, c, n, func(_, i int) error {
					m, id := rawEnvelope("single", i)
					_, err := js.PublishMsg(ctx, m, jetstream.WithMsgID(id))
					return err
				})

				// A batch of one is not a batch: from one appender there
				// is nothing to group, and its raw part is the single.
				batchStart := time.Now()
				for done := 0; c > 1 && done < n; done += c {
					msgs := make([]*nats.Msg, min(c, n-done))
					for i := range msgs {
						var id string
						msgs[i], id = rawEnvelope("batch", done+i)
						msgs[i].Header.Set(jetstream.MsgIDHeader, id)
					}
					if err := publishAtomic(ctx, nc, events.NewID(), msgs); err != nil {
						b.Fatal(err)
					}
				}
				rawBatch := time.Since(batchStart)

				orbit := concurrently(b, c, n, func(_, i int) error {
					ev, data := stepFinished(i)
					ev.RunID = "orbit"
					ev.ID = events.DecisionID(events.StepFinished, "orbit", ev.StepKey, "1")
					_, err := l.Append(ctx, ev, data)
					return err
				})
				b.StopTimer()

				rate := func(d time.Duration) float64 { return float64(n) / d.Seconds() }
				b.ReportMetric(rate(orbit), "orbit-events/s")
				b.ReportMetric(rate(rawSingle), "raw-single-events/s")
				b.ReportMetric(rate(orbit)/rate(rawSingle), "×raw-single")
				if c > 1 {
					b.ReportMetric(rate(rawBatch), "raw-batch-events/s")
					b.ReportMetric(rate(orbit)/rate(rawBatch), "×raw-batch")
				}
				if batches, batched := l.GroupCommits(); batches > 0 {
					b.ReportMetric(float64(batched)/float64(batches), "events/batch")
				}
			})
		}
	}
}
