package events

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// stepsConfig is StepsStream's configuration: a work queue of step
// commands, persisted asynchronously where the store allows it.
//
// Why asynchronous: a step command need not survive the server. The log
// holds the decision (step.started) the command carries out, and an
// engine that resumes a run sends again the command of every step
// started and not finished that the queue does not hold (the
// interpreter's redispatch); a redelivered command whose step finished is
// acknowledged without running. So the command's store and the tombstone
// of its acknowledgement, two fsyncs a step under SyncAlways, leave the
// step's critical path. Run requests stay in CommandsStream, synchronous:
// a --detach caller has only the request's ack to go by.
//
// IMPORTANT: only on an embedded single-node store. The server refuses
// asynchronous persistence on a replicated stream (and with atomic batch
// publish, which the stream then does without). On an external server
// the engine outlives a server that restarts, and with it its runs, which
// are not resumed and so would not send a lost command again: there the
// stream stays synchronous, with the group commit of commands.
func (l *Log) stepsConfig() jetstream.StreamConfig {
	cfg := jetstream.StreamConfig{
		Name:        StepsStream,
		Description: "Orbit's step commands",
		Subjects:    []string{StepsRoot + ".>", StepsKeeperSubject},
		Retention:   jetstream.WorkQueuePolicy,
		Storage:     jetstream.FileStorage,
		Duplicates:  l.cfg.DuplicateWindow,
		Replicas:    l.cfg.Replicas,
		// The queue's keeper replaces itself by a roll-up (keeper.go).
		AllowRollup: true,
	}
	if l.srv != nil && l.cfg.Replicas <= 1 {
		cfg.PersistMode = jetstream.AsyncPersistMode
	} else {
		cfg.AllowAtomicPublish = true
	}
	return cfg
}

// ensureStepsStream is ensureStream for StepsStream, whose persistence
// mode the server cannot change in place: a stream made with the other
// mode (a project moved from an embedded store to a cluster, or back) is
// made again, with the commands it held.
func (l *Log) ensureStepsStream(ctx context.Context, want jetstream.StreamConfig) (jetstream.Stream, error) {
	lookup, cancel := l.lookupContext(ctx)
	s, err := l.js.Stream(lookup, want.Name)
	cancel()
	if err != nil && !errors.Is(err, jetstream.ErrStreamNotFound) {
		return nil, fmt.Errorf("%w: stream %s: %v", ErrUnavailable, want.Name, err)
	}
	if err == nil && s.CachedInfo().Config.PersistMode != want.PersistMode {
		held, err := l.readCommands(ctx, s, ">")
		if err != nil {
			return nil, err
		}
		l.log.Warn("making the step command stream again for its persistence mode", "stream", want.Name,
			"persist_mode", s.CachedInfo().Config.PersistMode, "want", want.PersistMode, "commands", len(held))
		del, cancel := l.createContext(ctx)
		err = l.js.DeleteStream(del, want.Name)
		cancel()
		if err != nil {
			return nil, fmt.Errorf("events: making stream %s again: %w", want.Name, err)
		}
		if s, err = l.ensureStream(ctx, want); err != nil {
			return nil, err
		}
		for _, m := range held {
			if err := l.storeCommand(ctx, want.Name, &nats.Msg{Subject: m.Subject, Header: m.Header, Data: m.Data}); err != nil {
				return nil, err
			}
		}
		return s, nil
	}
	return l.ensureStream(ctx, want)
}

// moveStepCommands moves the step commands an engine of an earlier
// version queued in CommandsStream, under orbit.cmd.step.<rest>, to
// StepsStream under orbit.step.<rest>, so that they still run; then it
// deletes that engine's consumers of them. Each is checked as its worker
// would check it, signed again for its new subject, stored and only then
// removed from CommandsStream: an engine killed in between moves it again
// at its next start, and the copy is stored once (its id is the same,
// within the duplicate window) or, if not, found finished by its worker.
func (l *Log) moveStepCommands(ctx context.Context) error {
	old := CommandsRoot + "." + StepCommandPrefix
	held, err := l.readCommands(ctx, l.cmds, old+">")
	if err != nil {
		return err
	}
	for _, m := range held {
		if l.checkCommand(CommandsStream, m.Sequence, m.Subject, m.Header, m.Data) == nil {
			id := m.Header.Get(CommandIDHeader)
			if id == "" { // unsigned: queued before the log key was made
				id = m.Header.Get(jetstream.MsgIDHeader)
			}
			msg := &nats.Msg{Subject: StepsRoot + "." + strings.TrimPrefix(m.Subject, old), Data: m.Data, Header: nats.Header{}}
			msg.Header.Set(jetstream.MsgIDHeader, l.publishID(id))
			if l.key != nil {
				l.key.sign(msg, id)
			}
			if err := l.storeCommand(ctx, StepsStream, msg); err != nil {
				return err
			}
		}
		dctx, cancel := withDefaultTimeout(ctx)
		err := l.cmds.DeleteMsg(dctx, m.Sequence)
		cancel()
		if err != nil && !errors.Is(err, jetstream.ErrMsgNotFound) {
			return fmt.Errorf("%w: removing moved command %d (%s): %v", ErrUnavailable, m.Sequence, m.Subject, err)
		}
	}
	if len(held) > 0 {
		l.log.Info("moved step commands queued by an earlier engine", "from", CommandsStream, "to", StepsStream, "commands", len(held))
	}
	return l.dropStepConsumers(ctx, old)
}

// dropStepConsumers deletes the consumers of CommandsStream that take
// step commands (a filter under old): their commands are in StepsStream.
func (l *Log) dropStepConsumers(ctx context.Context, old string) error {
	ctx, cancel := withDefaultTimeout(ctx)
	defer cancel()
	lister := l.cmds.ListConsumers(ctx)
	var drop []string
	for info := range lister.Info() {
		if strings.HasPrefix(info.Config.FilterSubject, old) {
			drop = append(drop, info.Name)
		}
	}
	if err := lister.Err(); err != nil {
		return fmt.Errorf("%w: listing the consumers of %s: %v", ErrUnavailable, CommandsStream, err)
	}
	for _, name := range drop {
		if err := l.js.DeleteConsumer(ctx, CommandsStream, name); err != nil && !errors.Is(err, jetstream.ErrConsumerNotFound) {
			return fmt.Errorf("%w: deleting consumer %s of %s: %v", ErrUnavailable, name, CommandsStream, err)
		}
	}
	return nil
}

// readCommands returns every message of stream under filter, read one by
// one from the first: a work queue has no room for a second consumer.
func (l *Log) readCommands(ctx context.Context, stream jetstream.Stream, filter string) ([]*jetstream.RawStreamMsg, error) {
	ctx, cancel := withDefaultTimeout(ctx)
	defer cancel()
	info, err := stream.Info(ctx)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	var out []*jetstream.RawStreamMsg
	for seq := info.State.FirstSeq; info.State.Msgs > 0 && seq <= info.State.LastSeq; {
		msg, err := stream.GetMsg(ctx, seq, jetstream.WithGetMsgSubject(filter))
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%w: reading %s %d: %v", ErrUnavailable, info.Config.Name, seq, err)
		}
		out = append(out, msg)
		seq = msg.Sequence + 1
	}
	return out, nil
}

// storeCommand stores msg, a command ready to publish, in stream.
func (l *Log) storeCommand(ctx context.Context, stream string, msg *nats.Msg) error {
	ctx, cancel := withDefaultTimeout(ctx)
	defer cancel()
	if _, err := l.js.PublishMsg(ctx, msg, jetstream.WithExpectStream(stream)); err != nil {
		return publishError("command "+msg.Subject, err)
	}
	return nil
}
