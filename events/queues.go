package events

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/nats-io/nats.go/jetstream"
)

// QueueDepth is what one durable consumer of the command queue has waiting.
type QueueDepth struct {
	// Consumer is the consumer's durable name (ConsumerSpec.Durable).
	Consumer string
	// Pending counts commands stored for it and not delivered yet.
	Pending uint64
	// AckPending counts commands delivered and not acknowledged yet: the
	// work in progress.
	AckPending int
}

// QueueDepths returns the depth of every durable consumer of the command
// queues (CommandsStream's and StepsStream's), by name. It reads the server's consumer state, so on a cluster it
// counts what every engine has waiting. ErrNotEngine on a Log made by Dial.
func (l *Log) QueueDepths(ctx context.Context) ([]QueueDepth, error) {
	ctx, cancel := withDefaultTimeout(ctx)
	defer cancel()
	if err := l.needCommands("QueueDepths"); err != nil {
		return nil, err
	}
	var out []QueueDepth
	for _, stream := range []jetstream.Stream{l.cmds, l.steps} {
		lister := stream.ListConsumers(ctx)
		for info := range lister.Info() {
			if info.Config.Durable == "" {
				continue
			}
			out = append(out, QueueDepth{Consumer: info.Config.Durable, Pending: info.NumPending, AckPending: info.NumAckPending})
		}
		if err := lister.Err(); err != nil {
			return nil, fmt.Errorf("%w: listing the command queue's consumers: %v", ErrUnavailable, err)
		}
	}
	slices.SortFunc(out, func(a, b QueueDepth) int { return strings.Compare(a.Consumer, b.Consumer) })
	return out, nil
}
