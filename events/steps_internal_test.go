package events

import (
	"encoding/json"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// TestStepCommandsQueuedByAnEarlierEngineMove: a root whose ORBIT_COMMANDS
// holds step commands under orbit.cmd.step.… and that engine's consumer of
// them, as an engine before ORBIT_STEPS left it, is opened again. The
// signed command and the one queued before the log key was made are moved
// to ORBIT_STEPS, signed for their new subject, and run there under their
// ids; a forged one is not moved and is recorded as rejected; the old
// queue holds none of them and the old consumer is gone.
func TestStepCommandsQueuedByAnEarlierEngineMove(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	root := t.TempDir()
	var mu sync.Mutex
	var rejected []Rejection
	cfg := Config{StoreDir: filepath.Join(root, "nats"), Redactor: &Redactor{},
		OnReject: func(r Rejection) { mu.Lock(); rejected = append(rejected, r); mu.Unlock() }}
	l, err := Open(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	old := func(l *Log, name, id string, sign bool) {
		t.Helper()
		body, _ := json.Marshal(map[string]string{"name": name})
		msg := &nats.Msg{Subject: CommandsRoot + "." + name, Data: body, Header: nats.Header{}}
		msg.Header.Set(jetstream.MsgIDHeader, l.publishID(id))
		if sign {
			l.key.sign(msg, id)
		}
		if _, err := l.js.PublishMsg(ctx, msg, jetstream.WithExpectStream(CommandsStream)); err != nil {
			t.Fatal(err)
		}
	}
	// Queued before the log key was made: unsigned, below commands_from.
	old(l, "step.shell.R.before.1", "cmd-before", false)
	if _, err := l.js.CreateOrUpdateConsumer(ctx, CommandsStream, jetstream.ConsumerConfig{
		Durable: "worker-shell", FilterSubject: CommandsRoot + ".step.shell.>", AckPolicy: jetstream.AckExplicitPolicy,
	}); err != nil {
		t.Fatal(err)
	}
	l.Close()

	cfg.LogKeyFile, cfg.MakeLogKey = filepath.Join(root, "log.key"), true
	if l, err = Open(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	old(l, "step.shell.R.signed.1", "cmd-signed", true)
	old(l, "step.shell.R.forged.1", "cmd-forged", false)
	// The old consumer comes back as an engine before ORBIT_STEPS made it.
	if _, err := l.js.CreateOrUpdateConsumer(ctx, CommandsStream, jetstream.ConsumerConfig{
		Durable: "worker-shell", FilterSubject: CommandsRoot + ".step.shell.>", AckPolicy: jetstream.AckExplicitPolicy,
	}); err != nil {
		t.Fatal(err)
	}
	l.Close()

	if l, err = Open(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	left, err := l.readCommands(ctx, l.cmds, CommandsRoot+".step.>")
	if err != nil {
		t.Fatal(err)
	}
	if len(left) != 0 {
		t.Errorf("%d step commands left in %s, want none", len(left), CommandsStream)
	}
	if _, err := l.js.Consumer(ctx, CommandsStream, "worker-shell"); err != jetstream.ErrConsumerNotFound {
		t.Errorf("the old consumer of step commands: %v, want it gone", err)
	}
	for name, want := range map[string]bool{"step.shell.R.before.1": true, "step.shell.R.signed.1": true, "step.shell.R.forged.1": false} {
		if got, err := l.Pending(ctx, name); err != nil || got != want {
			t.Errorf("Pending(%s) = %v, %v; want %v", name, got, err, want)
		}
	}
	mu.Lock()
	if len(rejected) != 1 || rejected[0].Stream != CommandsStream || rejected[0].Subject != CommandsRoot+".step.shell.R.forged.1" {
		t.Errorf("rejected %+v, want the forged command alone", rejected)
	}
	mu.Unlock()

	got := make(chan *Command, 3)
	stop, err := l.Consume(ctx, ConsumerSpec{Durable: "worker-shell", Command: "step.shell.>", AckWait: 5 * time.Second}, func(c *Command) {
		if err := c.Ack(ctx); err != nil {
			t.Error(err)
		}
		got <- c
	})
	if err != nil {
		t.Fatal(err)
	}
	defer stop.Stop()
	ids := map[string]string{}
	for range 2 {
		select {
		case c := <-got:
			var body map[string]string
			if err := c.Decode(&body); err != nil {
				t.Fatal(err)
			}
			ids[c.ID] = body["name"]
			if c.Stream != StepsStream {
				t.Errorf("command %s delivered from %s", c.ID, c.Stream)
			}
		case <-ctx.Done():
			t.Fatalf("moved commands not delivered; got %v", ids)
		}
	}
	if ids["cmd-before"] != "step.shell.R.before.1" || ids["cmd-signed"] != "step.shell.R.signed.1" {
		t.Errorf("delivered %v, want the two moved commands under their ids", ids)
	}
	select {
	case c := <-got:
		t.Errorf("a third command delivered: %s", c.ID)
	case <-time.After(300 * time.Millisecond):
	}
}

// TestStepCommandsPersistAsynchronouslyOnlyWhereTheyMay: on an embedded
// single node ORBIT_STEPS persists asynchronously (and takes no atomic
// batch); ORBIT_COMMANDS, which holds run requests, stays synchronous.
func TestStepCommandsPersistAsynchronouslyOnlyWhereTheyMay(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	l := openLog(t, DurabilityStrict)
	steps, err := l.steps.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if steps.Config.PersistMode != jetstream.AsyncPersistMode || steps.Config.AllowAtomicPublish || !l.stepsAsync {
		t.Errorf("%s: persist mode %s, atomic publish %v; want async without", StepsStream, steps.Config.PersistMode, steps.Config.AllowAtomicPublish)
	}
	cmds, err := l.cmds.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if cmds.Config.PersistMode != jetstream.DefaultPersistMode {
		t.Errorf("%s: persist mode %s, want the default", CommandsStream, cmds.Config.PersistMode)
	}
	l.cfg.Replicas = 3
	if cfg := l.stepsConfig(); cfg.PersistMode != jetstream.DefaultPersistMode || !cfg.AllowAtomicPublish {
		t.Errorf("replicated: persist mode %s, atomic publish %v; want synchronous with", cfg.PersistMode, cfg.AllowAtomicPublish)
	}
}

// TestAStepsStreamOfTheOtherPersistModeIsMadeAgain: the server cannot
// change a stream's persistence mode in place, so an ORBIT_STEPS made
// with the other mode (a project moved from the embedded store to a
// cluster) is made again, with the commands and the keeper it held.
func TestAStepsStreamOfTheOtherPersistModeIsMadeAgain(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	root := t.TempDir()
	l, err := Open(ctx, Config{StoreDir: filepath.Join(root, "nats"), Redactor: &Redactor{},
		LogKeyFile: filepath.Join(root, "log.key"), MakeLogKey: true})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for _, name := range []string{"step.shell.R.a.1", "step.shell.R.b.1"} {
		if err := l.Send(ctx, name, "cmd-"+name, map[string]string{"name": name}); err != nil {
			t.Fatal(err)
		}
	}
	want := l.stepsConfig()
	want.PersistMode, want.AllowAtomicPublish = jetstream.DefaultPersistMode, true
	if l.steps, err = l.ensureStepsStream(ctx, want); err != nil {
		t.Fatal(err)
	}
	info, err := l.steps.Info(ctx, jetstream.WithSubjectFilter(">"))
	if err != nil {
		t.Fatal(err)
	}
	if info.Config.PersistMode != jetstream.DefaultPersistMode || !info.Config.AllowAtomicPublish {
		t.Errorf("persist mode %s, atomic publish %v; want the default, with", info.Config.PersistMode, info.Config.AllowAtomicPublish)
	}
	if info.State.Subjects[StepsKeeperSubject] != 1 {
		t.Errorf("%d keepers, want 1", info.State.Subjects[StepsKeeperSubject])
	}
	for _, name := range []string{"step.shell.R.a.1", "step.shell.R.b.1"} {
		msg, err := l.steps.GetLastMsgForSubject(ctx, CommandSubject(name))
		if err != nil {
			t.Fatalf("%s not held after the stream was made again: %v", name, err)
		}
		if reason := l.verifyCommand(StepsStream, msg.Sequence, msg.Subject, msg.Header, msg.Data); reason != "" {
			t.Errorf("%s does not verify after the stream was made again: %s", name, reason)
		}
	}
}
