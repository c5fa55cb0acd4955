package events

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/orbitrun/orbit/internal/failpoint"
)

// Send publishes a command to its subject (CommandSubject) on its work
// queue — a step command to StepsStream, any other to CommandsStream —
// with id as its Nats-Msg-Id (a keyed hash of it when the Log signs: see
// CommandIDHeader), and waits until it is stored. Sending the same id twice
// within the duplicate window stores it once. Secrets in the command are
// NOT redacted: commands carry what workers need to act, are deleted once
// acknowledged, and never enter the event log.
//
// IMPORTANT: on an embedded single-node store StepsStream persists
// asynchronously (see stepsConfig): a step command Send returned for can
// be lost with the server. Its sender must be able to send it again from
// the log, as the interpreter does from a step.started without
// step.finished when it resumes a run.
func (l *Log) Send(ctx context.Context, name, id string, payload any) error {
	if err := l.room(ctx); err != nil {
		return err
	}
	data, err := json.Marshal(payload)
	if err != nil {
		return fmt.Errorf("events: encoding command %s: %w", name, err)
	}
	if data, err = l.shrink(ctx, data); err != nil {
		return fmt.Errorf("events: storing the large values of command %s: %w", name, err)
	}
	stream := commandStream(name)
	msg := &nats.Msg{Subject: CommandSubject(name), Data: data, Header: nats.Header{}}
	msg.Header.Set(jetstream.MsgIDHeader, l.publishID(id))
	if l.key != nil {
		l.key.sign(msg, id)
	}
	if l.grouped() && !(stream == StepsStream && l.stepsAsync) {
		// A fan-out's dispatches come in bursts: they share fsyncs like
		// events do (DESIGN §10). An asynchronous stream has no fsync to
		// share, and takes no atomic batch.
		msg.Header.Set(jetstream.ExpectedStreamHeader, stream)
		r := &commitReq{msg: msg, typ: "command " + name, size: len(msg.Data) + headerRoom, done: make(chan struct{})}
		if err := l.cmdCommitter(stream).submit(r); err != nil {
			return err
		}
		// IMPORTANT: no default timeout here, as in Append. The group
		// commit ends every request within its own bounds, which on a
		// cluster wait through a leader election (groupCommit.retry): a
		// shorter wait here gave up on a command that could still be
		// stored, and failed the run that sent it.
		if _, err := r.wait(ctx); err != nil {
			return err
		}
		l.sentCommand(ctx, stream)
		return nil
	}
	// On a cluster the JetStream context gives a publish without a
	// deadline the election window; elsewhere it gets the default.
	if _, cluster := l.js.(electionTolerant); !cluster {
		var cancel context.CancelFunc
		ctx, cancel = withDefaultTimeout(ctx)
		defer cancel()
	}
	if _, err := l.js.PublishMsg(ctx, msg, jetstream.WithExpectStream(stream)); err != nil {
		return publishError("command "+name, err)
	}
	if stream == StepsStream && l.failpoints {
		failpoint.Hit(FailpointStepCommandSent)
	}
	l.sentCommand(ctx, stream)
	return nil
}

// Failpoints of the step command queue (see internal/failpoint).
const (
	// FailpointStepCommandSent: a step command the server answered for,
	// which on an asynchronous StepsStream may not be written yet.
	FailpointStepCommandSent = "step-command-sent"
	// FailpointStepCommandAcked: a step command's ack the server
	// confirmed (by Ack, or AckNoWait while failpoints are armed), which
	// on an asynchronous StepsStream may not be written yet: the command
	// may come back.
	FailpointStepCommandAcked = "step-command-acked"
)

// Pending reports whether a command is stored under orbit.cmd.<name>: sent
// and not yet acknowledged, and, on a signed log, one that verifies. Commands whose names are unique per decision
// (one subject per step attempt) can so be checked before sending them again.
// ErrNotEngine on a Log made by Dial.
func (l *Log) Pending(ctx context.Context, name string) (bool, error) {
	ctx, cancel := withDefaultTimeout(ctx)
	defer cancel()
	if err := l.needCommands("Pending"); err != nil {
		return false, err
	}
	raw, err := l.commandQueue(name).GetLastMsgForSubject(ctx, CommandSubject(name))
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("%w: looking up command %s: %v", ErrUnavailable, name, err)
	}
	// A forged command under the name must not stop the real one from
	// being sent: it is never run (see Consume), so it is not pending.
	if l.key != nil && l.verifyCommand(commandStream(name), raw.Sequence, raw.Subject, raw.Header, raw.Data) != "" {
		return false, nil
	}
	return true, nil
}

// commandQueue is the stream that holds the commands named name.
func (l *Log) commandQueue(name string) jetstream.Stream {
	if commandStream(name) == StepsStream {
		return l.steps
	}
	return l.cmds
}

// CommandsLastSeq returns the sequence of the last command ever stored in
// the queue of the commands named name (a name or a wildcard over names:
// "step.>" for the step commands); ErrNotEngine on a Log made by Dial.
func (l *Log) CommandsLastSeq(ctx context.Context, name string) (uint64, error) {
	ctx, cancel := withDefaultTimeout(ctx)
	defer cancel()
	if err := l.needCommands("CommandsLastSeq"); err != nil {
		return 0, err
	}
	info, err := l.commandQueue(name).Info(ctx)
	if err != nil {
		return 0, fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	return info.State.LastSeq, nil
}

// needCommands returns ErrNotEngine, naming the method, when the Log was
// made by Dial and so has no command stream bound.
func (l *Log) needCommands(method string) error {
	if l.cmds == nil {
		return fmt.Errorf("events: %s on a dialled log: %w", method, ErrNotEngine)
	}
	return nil
}

// ConsumerSpec configures a durable consumer of commands.
type ConsumerSpec struct {
	// Durable is the consumer's name; engines that share it share the work.
	Durable string
	// Command is the command name (or a wildcard such as "step.*") to consume.
	Command string
	// AckWait is how long a delivered command may go without an ack or a
	// progress signal before it is redelivered (default 30s).
	AckWait time.Duration
	// MaxDeliver bounds deliveries of one command (default 10; -1: no
	// bound); after the last, JetStream stops delivering it.
	MaxDeliver int
	// MaxAckPending bounds commands delivered and not yet acknowledged,
	// counted by the server across every process that consumes the
	// durable (default 64; with Concurrency, see there).
	MaxAckPending int
	// Concurrency, when set, is this process's own bound on the commands
	// it handles at once, and changes how Consume delivers them: each
	// handler runs on a goroutine of its own and holds one of Concurrency
	// slots until it returns, a command is asked for only when a slot is
	// free, and Stop waits for the handlers. Processes that share the
	// durable so share its commands by turns (see consumeSlots).
	// MaxAckPending then defaults to Concurrency with Reset (the process
	// is the sole consumer) and to no bound (-1) without: every process
	// writes the same value into the shared consumer, and each one's
	// bound is its own Concurrency.
	Concurrency int
	// Reset deletes the consumer before creating it again, so that commands
	// delivered to a consumer that is gone (a killed engine) are delivered
	// again at once instead of after their ack wait. Only a process that
	// knows it is the sole consumer (an engine on an embedded store) may set
	// it; the commands then come with Delivery 1, and the caller must treat
	// every command stored before the reset (StreamSeq ≤ CommandsLastSeq of
	// Command taken before) as possibly delivered before.
	Reset bool
}

func (s *ConsumerSpec) setDefaults() {
	if s.AckWait == 0 {
		s.AckWait = 30 * time.Second
	}
	if s.MaxDeliver == 0 {
		s.MaxDeliver = 10
	}
	switch {
	case s.MaxAckPending != 0:
	case s.Concurrency > 0 && s.Reset:
		s.MaxAckPending = s.Concurrency
	case s.Concurrency > 0:
		s.MaxAckPending = -1
	default:
		s.MaxAckPending = 64
	}
}

// config is the server's configuration of the consumer spec describes.
func (s *ConsumerSpec) config() jetstream.ConsumerConfig {
	return jetstream.ConsumerConfig{
		Durable:       s.Durable,
		FilterSubject: CommandSubject(s.Command),
		AckPolicy:     jetstream.AckExplicitPolicy,
		AckWait:       s.AckWait,
		MaxDeliver:    s.MaxDeliver,
		MaxAckPending: s.MaxAckPending,
		DeliverPolicy: jetstream.DeliverAllPolicy,
	}
}

// Command is one delivery of a command. Exactly one of Ack, Nak or Term
// should end it; InProgress extends its ack wait while work goes on. Its
// methods are safe for concurrent use.
type Command struct {
	Subject  string
	ID       string
	Data     json.RawMessage
	Delivery int // 1 on first delivery
	// Stream is the stream the command is in (StepsStream or
	// CommandsStream), StreamSeq its sequence there.
	Stream    string
	StreamSeq uint64
	msg       jetstream.Msg
	// failpoints: the Log's (see Log.failpoints).
	failpoints bool

	mu    sync.Mutex
	ended bool // by Ack, Nak or Term: InProgress sends nothing more
}

// end marks the delivery ended, under c.mu, so that no InProgress follows.
func (c *Command) end() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ended = true
}

// Decode unmarshals the command's payload.
func (c *Command) Decode(v any) error {
	if err := json.Unmarshal(c.Data, v); err != nil {
		return fmt.Errorf("%w: command %s: %v", ErrInvalidRequest, c.ID, err)
	}
	return nil
}

// Ack removes the command from the queue for good. It waits for the server
// to confirm, so an acked command is never redelivered.
func (c *Command) Ack(ctx context.Context) error {
	c.end()
	ctx, cancel := withDefaultTimeout(ctx)
	defer cancel()
	if err := c.msg.DoubleAck(ctx); err != nil {
		return fmt.Errorf("%w: acking %s: %v", ErrUnavailable, c.ID, err)
	}
	if c.failpoints && c.Stream == StepsStream {
		failpoint.Hit(FailpointStepCommandAcked)
	}
	return nil
}

// AckNoWait acknowledges the command without waiting for the server: if the
// ack is lost the command is redelivered, so use it only where handling a
// redelivery is harmless.
func (c *Command) AckNoWait() error {
	if c.failpoints && c.Stream == StepsStream {
		// The failpoint is where the server has the ack and may not have
		// written it: it needs the server's answer first.
		ctx, cancel := withDefaultTimeout(context.Background())
		defer cancel()
		return c.Ack(ctx)
	}
	c.end()
	return c.msg.Ack()
}

// Nak asks for redelivery after delay.
func (c *Command) Nak(delay time.Duration) error {
	c.end()
	return c.msg.NakWithDelay(delay)
}

// InProgress tells the server the command is still being worked on, which
// restarts its ack wait. After Ack, Nak or Term it sends nothing: a
// progress signal after a Nak would undo the Nak's delay.
func (c *Command) InProgress() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ended {
		return nil
	}
	return c.msg.InProgress()
}

// Term removes the command without redelivery (for commands that can never
// succeed).
func (c *Command) Term() error {
	c.end()
	return c.msg.Term()
}

// Stopper ends a long-running consumption. Stop waits until handlers have
// returned.
type Stopper interface{ Stop() }

// Consume delivers commands from a durable consumer to handle, one call at a
// time, in delivery order. Handlers that take long should hand the command to
// a goroutine and return; MaxAckPending bounds how many are outstanding. With
// spec.Concurrency set, handlers run concurrently instead, within this
// process's own bound (see ConsumerSpec.Concurrency). The consumer's
// configuration is created or corrected to match spec.
// ErrNotEngine on a Log made by Dial.
func (l *Log) Consume(ctx context.Context, spec ConsumerSpec, handle func(*Command)) (Stopper, error) {
	if err := l.needCommands("Consume"); err != nil {
		return nil, err
	}
	spec.setDefaults()
	cctx, cancel := withDefaultTimeout(ctx)
	defer cancel()
	if spec.Reset {
		err := l.js.DeleteConsumer(cctx, commandStream(spec.Command), spec.Durable)
		if err != nil && !errors.Is(err, jetstream.ErrConsumerNotFound) {
			return nil, fmt.Errorf("%w: resetting consumer %s: %v", ErrUnavailable, spec.Durable, err)
		}
	}
	cons, err := l.createConsumer(ctx, commandStream(spec.Command), spec.config())
	if err != nil {
		return nil, fmt.Errorf("%w: consumer %s: %v", ErrUnavailable, spec.Durable, err)
	}
	if spec.Concurrency > 0 {
		return l.consumeSlots(ctx, cons, spec, handle)
	}
	cc, err := cons.Consume(func(msg jetstream.Msg) {
		if cmd := l.command(ctx, msg); cmd != nil {
			handle(cmd)
		}
	}, jetstream.PullMaxMessages(spec.MaxAckPending), jetstream.ConsumeErrHandler(func(_ jetstream.ConsumeContext, err error) {
		if !errors.Is(err, jetstream.ErrNoHeartbeat) {
			l.log.Debug("consumer error", "consumer", spec.Durable, "err", err)
		}
	}))
	if err != nil {
		return nil, fmt.Errorf("%w: consuming %s: %v", ErrUnavailable, spec.Durable, err)
	}
	return consumeStopper{cc}, nil
}

// command turns a delivered message into a Command, or settles it and
// returns nil: a message without metadata or failing the log's integrity
// check is removed for good, one whose large values cannot be read yet is
// redelivered after a second.
func (l *Log) command(ctx context.Context, msg jetstream.Msg) *Command {
	meta, err := msg.Metadata()
	if err != nil {
		l.log.Warn("dropping a command without metadata", "subject", msg.Subject(), "err", err)
		_ = msg.Term()
		return nil
	}
	hdr := msgHeaders(msg)
	if err := l.checkCommand(meta.Stream, meta.Sequence.Stream, msg.Subject(), hdr, msg.Data()); err != nil {
		// Never run: a forged or altered command is removed for good.
		_ = msg.Term()
		return nil
	}
	data, err := l.expand(ctx, msg.Data())
	if err != nil {
		l.log.Warn("command's large values not readable; redelivering", "subject", msg.Subject(), "err", err)
		_ = msg.NakWithDelay(time.Second)
		return nil
	}
	id := hdr.Get(CommandIDHeader)
	if id == "" { // unsigned: sent before the log key was made
		id = hdr.Get(jetstream.MsgIDHeader)
	}
	return &Command{Subject: msg.Subject(), Data: data, msg: msg, ID: id,
		Delivery: int(meta.NumDelivered), Stream: meta.Stream, StreamSeq: meta.Sequence.Stream, failpoints: l.failpoints}
}

type consumeStopper struct{ cc jetstream.ConsumeContext }

func (s consumeStopper) Stop() {
	s.cc.Stop()
	<-s.cc.Closed()
}

// createConsumer creates or updates a durable consumer of the command
// queue stream, trying again for up to ElectionWindow while the request finds the
// stream electing a leader or the connection moving to another server (a
// node's loss on a cluster): the request is idempotent, and an engine that
// gave up here would stop with the cluster only seconds from answering.
func (l *Log) createConsumer(ctx context.Context, stream string, cfg jetstream.ConsumerConfig) (jetstream.Consumer, error) {
	deadline := time.Now().Add(ElectionWindow)
	for {
		cctx, cancel := withDefaultTimeout(ctx)
		cons, err := l.js.CreateOrUpdateConsumer(cctx, stream, cfg)
		cancel()
		if err == nil || !electing(err) || ctx.Err() != nil || time.Now().After(deadline) {
			return cons, err
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(electionRetryWait):
		}
	}
}
