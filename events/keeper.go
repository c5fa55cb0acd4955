package events

import (
	"context"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// KeeperSubject holds the command queue's keeper: one small message that
// no consumer takes, so that it stays in ORBIT_COMMANDS for good;
// StepsKeeperSubject that of ORBIT_STEPS: the stream's root itself, which
// no filter over step commands (orbit.step.>) takes.
//
// Why: the server's file store removes a message block once its last
// message is deleted, and when that block is the one being written it
// opens a new block file (and writes a tombstone) at once. A work queue
// that drains after every command — a sequential job has one command in
// flight — so paid an unlink, a file creation and a tombstone on every
// acknowledgement, under the stream's lock, in the path of the next
// step's dispatch: measured, a third of the whole process's CPU in the
// relaxed 200-step echo job. With the keeper in the block being written,
// the block never empties.
//
// IMPORTANT: the keeper must be in the block being written, and blocks
// roll over (every 4 MiB of commands). So it is stored again, as a
// subject roll-up that removes the previous one, when the engine opens
// the log and then every keeperEvery commands sent (see Send): after a
// roll-over at most that many acknowledgements pay for the empty block.
const (
	KeeperSubject      = CommandsRoot + ".keeper"
	StepsKeeperSubject = StepsRoot
)

// keeperEvery is how many commands a Log sends between two keepers.
const keeperEvery = 256

// keepQueue stores the keeper of stream's queue (CommandsStream or
// StepsStream), replacing the one before.
func (l *Log) keepQueue(ctx context.Context, stream string) error {
	ctx, cancel := withDefaultTimeout(ctx)
	defer cancel()
	subject := KeeperSubject
	if stream == StepsStream {
		subject = StepsKeeperSubject
	}
	msg := &nats.Msg{Subject: subject, Header: nats.Header{}}
	msg.Header.Set(jetstream.MsgRollup, jetstream.MsgRollupSubject)
	if l.key != nil {
		l.key.sign(msg, "")
	}
	if _, err := l.js.PublishMsg(ctx, msg, jetstream.WithExpectStream(stream)); err != nil {
		return publishError("the command queue's keeper", err)
	}
	return nil
}

// sentCommand counts a command sent to stream and stores a new keeper
// there every keeperEvery commands. A keeper that cannot be stored costs
// speed, not correctness: it is logged and tried again keeperEvery
// commands later.
func (l *Log) sentCommand(ctx context.Context, stream string) {
	sent := &l.sent
	if stream == StepsStream {
		sent = &l.stepsSent
	}
	if sent.Add(1)%keeperEvery != 0 {
		return
	}
	if err := l.keepQueue(ctx, stream); err != nil {
		l.log.Warn("the command queue's keeper was not stored", "stream", stream, "err", err)
	}
}
