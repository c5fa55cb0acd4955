package events

import (
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// commandBlocks lists the block files of the step command queue in the
// store.
func commandBlocks(t *testing.T, l *Log) []string {
	t.Helper()
	blocks, err := filepath.Glob(filepath.Join(l.cfg.StoreDir, "jetstream", "*", "streams", StepsStream, "msgs", "*.blk"))
	if err != nil {
		t.Fatal(err)
	}
	for i, b := range blocks {
		blocks[i] = filepath.Base(b)
	}
	slices.Sort(blocks)
	return blocks
}

// TestQueueKeeperKeepsTheWrittenBlock sends and acknowledges commands one
// at a time, as a sequential job does, so that the queue drains after
// each. The block being written must stay the same file: without the
// keeper the server removed it and created another at every ack.
func TestQueueKeeperKeepsTheWrittenBlock(t *testing.T) {
	for _, durability := range []string{DurabilityStrict, DurabilityRelaxed} {
		t.Run(durability, func(t *testing.T) {
			t.Parallel()
			ctx := testContext(t)
			l := openLog(t, durability)
			acked := make(chan struct{})
			stop, err := l.Consume(ctx, ConsumerSpec{Durable: "t", Command: "step.>", AckWait: 5 * time.Second}, func(c *Command) {
				if err := c.Ack(ctx); err != nil {
					t.Error(err)
				}
				acked <- struct{}{}
			})
			if err != nil {
				t.Fatal(err)
			}
			defer stop.Stop()
			var before []string
			for i := range 20 {
				name := "step.echo.R.s" + strconv.Itoa(i) + ".1"
				if err := l.Send(ctx, name, "cmd-"+name, map[string]int{"i": i}); err != nil {
					t.Fatal(err)
				}
				select {
				case <-acked:
				case <-ctx.Done():
					t.Fatal("command not delivered")
				}
				if i == 0 {
					before = commandBlocks(t, l)
				}
			}
			after := commandBlocks(t, l)
			if !slices.Equal(before, after) {
				t.Errorf("the queue's blocks went from %v to %v while it drained after every command", before, after)
			}
			info, err := l.steps.Info(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if info.State.Msgs != 1 {
				t.Errorf("the drained queue holds %d messages, want its keeper alone", info.State.Msgs)
			}
		})
	}
}

// TestQueueKeeperIsReplaced checks that each queue's keeper is stored
// when the log opens and the step queue's stored again every keeperEvery
// step commands, each one replacing the one before, and that a reopened
// log adds none.
func TestQueueKeeperIsReplaced(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	root := t.TempDir()
	cfg := Config{StoreDir: filepath.Join(root, "nats"), LogKeyFile: filepath.Join(root, "log.key"), MakeLogKey: true,
		Redactor: &Redactor{}, Durability: DurabilityRelaxed}
	l, err := Open(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	keeperIn := func(l *Log, stream jetstream.Stream, name, subject string) (seq, count uint64) {
		t.Helper()
		msg, err := stream.GetLastMsgForSubject(ctx, subject)
		if err != nil {
			t.Fatalf("no keeper in %s: %v", name, err)
		}
		if l.key == nil {
			t.Fatal("the log has no key")
		}
		if reason := l.verifyCommand(name, msg.Sequence, msg.Subject, msg.Header, msg.Data); reason != "" {
			t.Errorf("the keeper of %s does not verify: %s", name, reason)
		}
		info, err := stream.Info(ctx, jetstream.WithSubjectFilter(subject))
		if err != nil {
			t.Fatal(err)
		}
		return msg.Sequence, info.State.Subjects[subject]
	}
	keeper := func(l *Log) (seq, count uint64) {
		t.Helper()
		if _, n := keeperIn(l, l.cmds, CommandsStream, KeeperSubject); n != 1 {
			t.Errorf("%d keepers in %s, want 1", n, CommandsStream)
		}
		return keeperIn(l, l.steps, StepsStream, StepsKeeperSubject)
	}
	first, n := keeper(l)
	if n != 1 {
		t.Fatalf("%d keepers after open, want 1", n)
	}
	for i := range keeperEvery {
		name := "step.echo.R.s" + strconv.Itoa(i) + ".1"
		if err := l.Send(ctx, name, "cmd-"+name, nil); err != nil {
			t.Fatal(err)
		}
	}
	second, n := keeper(l)
	if second <= first || n != 1 {
		t.Errorf("after %d commands the keeper is at %d (was %d), %d of them; want one, stored again", keeperEvery, second, first, n)
	}
	l.Close()

	l, err = Open(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if _, n := keeper(l); n != 1 {
		t.Errorf("%d keepers after reopening, want 1", n)
	}
}
