package bench

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	bolt "go.etcd.io/bbolt"

	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/projector"
)

// BenchmarkViewRebuild fills a log with 100,000 events (the history of one
// run of the 200-step echo job, copied under as many run ids as it takes),
// rebuilds the views from it with projector.Rebuild, and puts the same
// event bodies into a bbolt file raw, keyed by sequence, in transactions of
// projector.DefaultBatchSize. It reports both times and their ratio, and
// the CPU time each took, which a busy machine does not inflate as it does
// wall time, and the time and CPU of reading the events alone. With
// ORBIT_BENCH_PROFILE=dir it profiles the rebuilds alone, and the reads
// (see profilePart).
func BenchmarkViewRebuild(b *testing.B) {
	engineLog, last, bodies := filledLog(b, 100_000)
	ctx := context.Background()

	var rebuild, raw, read, rebuildCPU, rawCPU, readCPU time.Duration
	b.ResetTimer()
	for range b.N {
		dir := b.TempDir()
		stopProfile := profilePart(b, "rebuild")
		start, startCPU := time.Now(), processCPU(b)
		if err := projector.Rebuild(ctx, engineLog, filepath.Join(dir, "views.db"), last); err != nil {
			b.Fatal(err)
		}
		rebuild += time.Since(start)
		rebuildCPU += processCPU(b) - startCPU
		stopProfile()

		start, startCPU = time.Now(), processCPU(b)
		if err := rawPuts(filepath.Join(dir, "raw.db"), bodies, projector.DefaultBatchSize); err != nil {
			b.Fatal(err)
		}
		raw += time.Since(start)
		rawCPU += processCPU(b) - startCPU

		stopProfile = profilePart(b, "read")
		start, startCPU = time.Now(), processCPU(b)
		readAll(b, engineLog, last)
		read += time.Since(start)
		readCPU += processCPU(b) - startCPU
		stopProfile()
	}
	b.StopTimer()
	b.ReportMetric(float64(last), "events")
	b.ReportMetric(rebuild.Seconds()/float64(b.N), "rebuild-s(goal<2)")
	b.ReportMetric(raw.Seconds()/float64(b.N), "raw-s")
	b.ReportMetric(raw.Seconds()/rebuild.Seconds(), "raw/rebuild-speed(goal≥0.5)")
	// CPU time, of the whole process (the embedded server included), says
	// what wall time says on a quiet machine when the machine is not.
	b.ReportMetric(rebuildCPU.Seconds()/float64(b.N), "rebuild-cpu-s")
	b.ReportMetric(rawCPU.Seconds()/float64(b.N), "raw-cpu-s")
	// Reading alone, as a rebuild reads, is the floor of what a rebuild
	// can cost however cheap its decoding and folds become.
	b.ReportMetric(read.Seconds()/float64(b.N), "read-s")
	b.ReportMetric(readCPU.Seconds()/float64(b.N), "read-cpu-s")
}

// filledLog is a log of total events: the history of one run of the
// 200-step echo job, copied under as many run ids as it takes. It returns
// the log, its last sequence and the events' bodies as stored.
func filledLog(b *testing.B, total int) (*events.Log, uint64, [][]byte) {
	b.Helper()
	engineLog, js := openLog(b, events.DurabilityRelaxed)
	engine(b, engineLog)
	_, _, hist := runJob(b, engineLog, echoJob(b, 200), nil)

	var bodies [][]byte
	for copyN := 0; len(bodies) < total; copyN++ {
		for _, ev := range hist {
			if len(bodies) == total {
				break
			}
			ev.Seq = 0
			ev.RunID = ev.RunID + "-" + strconv.Itoa(copyN)
			body, _ := json.Marshal(ev)
			subject, _ := ev.Subject()
			if _, err := js.PublishMsgAsync(&nats.Msg{Subject: subject, Data: body}); err != nil {
				b.Fatal(err)
			}
			bodies = append(bodies, body)
			if len(bodies)%1000 == 0 {
				// Keep under the client's limit of unacknowledged publishes.
				waitPublished(b, js)
			}
		}
	}
	waitPublished(b, js)
	last, err := engineLog.LastSeq(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	return engineLog, last, bodies
}

// BenchmarkViewRebuildFromSnapshot rebuilds views whose file was lost from
// their snapshot (see projector.SnapshotPath), taken 90,000 events into a
// log of 100,000, and from sequence 1 (projector.Rebuild), in the same
// run: with a snapshot, a rebuild costs what the log's tail and the check
// of the snapshot's records cost, however long the log.
func BenchmarkViewRebuildFromSnapshot(b *testing.B) {
	const total, every = 100_000, 90_000
	engineLog, last, _ := filledLog(b, total)
	ctx := context.Background()
	path := filepath.Join(b.TempDir(), "views.db")
	p, err := projector.Open(ctx, projector.Config{Path: path, Source: engineLog, SnapshotEvery: every})
	if err != nil {
		b.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- p.Run(runCtx) }()
	if err := p.WaitFor(ctx, last); err != nil {
		b.Fatal(err)
	}
	stop()
	if err := <-done; err != nil {
		b.Fatal(err)
	}
	if err := p.Close(); err != nil { // waits for the snapshot
		b.Fatal(err)
	}

	var fromSnap, full, fromSnapCPU, fullCPU time.Duration
	b.ResetTimer()
	for range b.N {
		if err := os.Remove(path); err != nil {
			b.Fatal(err)
		}
		start, startCPU := time.Now(), processCPU(b)
		p, err := projector.Open(ctx, projector.Config{Path: path, Source: engineLog, SnapshotEvery: -1})
		if err != nil {
			b.Fatal(err)
		}
		runCtx, stop := context.WithCancel(ctx)
		go func() { done <- p.Run(runCtx) }()
		if err := p.WaitFor(ctx, last); err != nil {
			b.Fatal(err)
		}
		fromSnap += time.Since(start)
		fromSnapCPU += processCPU(b) - startCPU
		stop()
		if err := <-done; err != nil {
			b.Fatal(err)
		}
		if err := p.Close(); err != nil {
			b.Fatal(err)
		}

		start, startCPU = time.Now(), processCPU(b)
		if err := projector.Rebuild(ctx, engineLog, filepath.Join(b.TempDir(), "full.db"), last); err != nil {
			b.Fatal(err)
		}
		full += time.Since(start)
		fullCPU += processCPU(b) - startCPU
	}
	b.StopTimer()
	b.ReportMetric(float64(last), "events")
	b.ReportMetric(fromSnap.Seconds()/float64(b.N), "from-snapshot-s")
	b.ReportMetric(full.Seconds()/float64(b.N), "from-start-s")
	b.ReportMetric(fromSnap.Seconds()/full.Seconds(), "snapshot/start")
	b.ReportMetric(fromSnapCPU.Seconds()/float64(b.N), "from-snapshot-cpu-s")
	b.ReportMetric(fullCPU.Seconds()/float64(b.N), "from-start-cpu-s")
}

// readAll reads the events of log through last as a rebuild does
// (events.Log.Scan from sequence 1, in batches of 4,096: envelopes decoded
// and verified, data left as stored) and does nothing with them.
func readAll(b *testing.B, log *events.Log, last uint64) {
	b.Helper()
	var n int
	err := log.Scan(context.Background(), 1, last, 4096, func(evs []events.Event) error {
		n += len(evs)
		return nil
	})
	if err != nil || n != int(last) {
		b.Fatalf("scanned %d events of %d: %v", n, last, err)
	}
}

func waitPublished(b *testing.B, js jetstream.JetStream) {
	b.Helper()
	select {
	case <-js.PublishAsyncComplete():
	case <-time.After(time.Minute):
		b.Fatal("async publishes not acknowledged in a minute")
	}
}

// rawPuts puts bodies into a new bbolt file at path, keyed by their index,
// batch to a transaction, and syncs it: the least a view rebuild writes.
func rawPuts(path string, bodies [][]byte, batch int) error {
	// As a rebuild does: no fsync per transaction, one at the end.
	db, err := bolt.Open(path, 0o600, &bolt.Options{NoSync: true})
	if err != nil {
		return err
	}
	defer db.Close()
	for from := 0; from < len(bodies); from += batch {
		err := db.Update(func(tx *bolt.Tx) error {
			bk, err := tx.CreateBucketIfNotExists([]byte("events"))
			if err != nil {
				return err
			}
			for i := from; i < min(from+batch, len(bodies)); i++ {
				var k [8]byte
				binary.BigEndian.PutUint64(k[:], uint64(i+1))
				if err := bk.Put(k[:], bodies[i]); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	return db.Sync()
}
