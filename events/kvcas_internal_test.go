package events

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
)

// TestRefusalOf: the leader's refusals of a compare-and-set, in the forms
// nats.go returns them, are told apart from every other failure.
func TestRefusalOf(t *testing.T) {
	stale := &jetstream.APIError{Code: 400, ErrorCode: jetstream.JSErrCodeStreamWrongLastSequence, Description: "wrong last sequence: 7"}
	busy := &jetstream.APIError{Code: 400, ErrorCode: jetstream.JSErrCodeStreamWrongLastSequenceConstant, Description: "wrong last sequence"}
	for _, tc := range []struct {
		name string
		err  error
		want refusal
	}{
		{"none", nil, notRefused},
		{"10071 bare", stale, refusedStale},
		{"10071 from Update", fmt.Errorf("%w: %w", stale, jetstream.ErrKeyRevisionMismatch), refusedStale},
		{"10071 from Create", fmt.Errorf("%w: %s", stale, "key exists"), refusedStale},
		{"key exists", jetstream.ErrKeyExists, refusedStale},
		{"10164 bare (a Create's second write)", busy, refusedBusy},
		{"10164 from Update", fmt.Errorf("%w: %w", busy, jetstream.ErrKeyRevisionMismatch), refusedBusy},
		{"10164 from Create", fmt.Errorf("%w: %w", busy, jetstream.ErrKeyExists), refusedBusy},
		{"timeout", context.DeadlineExceeded, notRefused},
		{"no responders", jetstream.ErrNoStreamResponse, notRefused},
		{"store full", &jetstream.APIError{Code: 500, ErrorCode: 10023}, notRefused},
		{"other", errors.New("boom"), notRefused},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, refusalOf(tc.err))
		})
	}
}
