package bench

import (
	"context"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/orbitrun/orbit/events"
)

// BenchmarkStrictLoad appends b.N events from 64 concurrent appenders on a
// strict log, by one of two paths: path=single publishes each event on its
// own with its ack, as Append did before the group commit; path=orbit
// calls events.Append. It exists to be run under strace by
// scripts/fsyncs.sh, which counts the fsyncs of each path per event.
func BenchmarkStrictLoad(b *testing.B) {
	const appenders = 64
	b.Run("path=single", func(b *testing.B) {
		_, js := openLog(b, events.DurabilityStrict)
		ctx := context.Background()
		b.ResetTimer()
		concurrently(b, appenders, b.N, func(_, i int) error {
			m, id := rawEnvelope("single", i)
			_, err := js.PublishMsg(ctx, m, jetstream.WithMsgID(id))
			return err
		})
	})
	b.Run("path=orbit", func(b *testing.B) {
		engineLog, _ := openLog(b, events.DurabilityStrict)
		l := client(b, engineLog)
		ctx := context.Background()
		b.ResetTimer()
		concurrently(b, appenders, b.N, func(_, i int) error {
			ev, data := stepFinished(i)
			ev.RunID = "orbit"
			ev.ID = events.DecisionID(events.StepFinished, "orbit", ev.StepKey, "1")
			_, err := l.Append(ctx, ev, data)
			return err
		})
		if batches, batched := l.GroupCommits(); batches > 0 {
			b.ReportMetric(float64(batched)/float64(batches), "events/batch")
		}
	})
}
