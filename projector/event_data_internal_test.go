package projector

import (
	"errors"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/events"
)

// eventData decodes the data of exactly the types some view folds: a
// folded type it lacks would abort every batch that holds one, and a type
// no view folds would be decoded for nothing. (That each fold takes the
// type eventData decodes into is exercised by the recorded histories,
// which every fold sees.)
func TestEventDataDecodesWhatTheViewsFold(t *testing.T) {
	t.Parallel()
	var folded []string
	folded = append(folded, sortedKeys(runFolds)...)
	folded = append(folded, sortedKeys(taskFolds)...)
	folded = append(folded, sortedKeys(memoryFolds)...)
	folded = append(folded, sortedKeys(groundhogRunFolds)...)
	folded = append(folded, sortedKeys(metricsFolds)...)
	slices.Sort(folded)
	assert.Equal(t, slices.Compact(folded), sortedKeys(eventData))
}

// A fold given data of another type than it takes aborts the batch: it is
// a bug of the projector, not an invalid event to skip.
func TestAFoldRefusesDataOfAnotherType(t *testing.T) {
	t.Parallel()
	ev := events.Event{ID: "ev-1", Type: events.RunQueued, Seq: 1}
	err := runFolds[events.RunQueued](nil, ev, &events.RunStartedData{})
	require.Error(t, err)
	assert.False(t, errors.Is(err, events.ErrInvalidEvent), err)
}
