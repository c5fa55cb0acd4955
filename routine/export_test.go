package routine

import (
	"context"

	"github.com/orbitrun/orbit/events"
)

// WriteStateForTest writes a routine's state as an engine that decided a
// tick and died before carrying it out leaves it.
func WriteStateForTest(ctx context.Context, log *events.Log, name string, st State, rev uint64) error {
	_, err := writeState(ctx, log, name, st, rev)
	return err
}
