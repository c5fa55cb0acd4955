package projector

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"sync"

	bolt "go.etcd.io/bbolt"

	"github.com/orbitrun/orbit/events"
)

// A view is one read model folded from the log (DESIGN §4). It owns its
// buckets: nothing but its own batches writes them, and a rebuild drops and
// recreates them.
//
// IMPORTANT: a view is a pure fold. Given the same events it must write the
// same bytes, whatever the batch boundaries: no wall clock, randomness or map
// iteration order may reach what it stores, and every change to what it
// folds or how it encodes it must bump its version, which makes existing
// files rebuild instead of mixing two formats.
type view interface {
	// name identifies the view in the meta bucket.
	name() string
	// version is the view's format version.
	version() int
	// buckets are the top-level buckets the view owns.
	buckets() [][]byte
	// begin starts folding one batch of events in tx, which holds the
	// view's buckets.
	begin(tx *bolt.Tx, log *slog.Logger) (viewBatch, error)
	// recordChecks say how to check each record of each of the view's
	// buckets, as Open does to find a damaged file (see recordCheck).
	recordChecks() []recordCheck
}

// A viewBatch folds the events of one transaction. It may keep the records
// it touches in memory and write them once, in flush.
type viewBatch interface {
	// fold applies one event. An error wrapping events.ErrInvalidEvent
	// means the event's data does not decode or is invalid: the event is
	// skipped and the batch goes on, so a fold must check all it refuses
	// before it changes anything. Any other error aborts the whole
	// transaction.
	fold(ev decodedEvent) error
	// flush writes what the batch changed.
	flush() error
}

// A foldTable maps each event type a view's batch B folds to its fold;
// the batch skips every other type.
type foldTable[B any] map[string]func(b B, ev events.Event, data any) error

// on makes a foldTable entry of a fold of an event whose data decodes
// into a D (the type eventData gives the event's type). The fold must not
// change the data (see decodedEvent).
func on[B, D any](fold func(B, events.Event, *D) error) func(B, events.Event, any) error {
	return func(b B, ev events.Event, data any) error {
		d, ok := data.(*D)
		if !ok {
			return fmt.Errorf("%s %s: the data is decoded as %T, the fold takes %T", ev.Type, ev.ID, data, d)
		}
		return fold(b, ev, d)
	}
}

// folding is the viewBatch of a batch B that folds events by the table
// folds.
type folding[B interface{ flush() error }] struct {
	batch B
	folds foldTable[B]
}

func (f folding[B]) fold(ev decodedEvent) error {
	fold, ok := f.folds[ev.Type]
	switch {
	case !ok:
		return nil
	case ev.err != nil:
		return ev.err
	}
	return fold(f.batch, ev.Event, ev.data)
}

func (f folding[B]) flush() error { return f.batch.flush() }

// views is every view the projector maintains, in the order each batch folds
// them. Each view reads only its own buckets, so the order changes nothing
// that they store.
var views = []view{runsView{}, tasksView{}, memoryView{}, groundhogRunView{}, metricsView{}, runChainsView{}}

// decodeData unmarshals an event's data like events.Event.Decode, except
// that numbers inside untyped values stay json.Number: a view re-encodes
// them exactly as the log has them, instead of rounding large integers
// through float64.
func decodeData(ev events.Event, v any) error {
	if len(ev.Data) == 0 {
		return nil
	}
	if err := unmarshal(ev.Data, v); err != nil {
		return fmt.Errorf("%w: %s %s at sequence %d: data: %v", events.ErrInvalidEvent, ev.Type, ev.ID, ev.Seq, err)
	}
	return nil
}

// unmarshal is json.Unmarshal with numbers kept as json.Number. Views are
// read back with it so that a record decoded and encoded again is
// byte-identical.
//
// Like a json.Decoder, it decodes the first value of data and ignores what
// follows it. The decoder and its buffer are reused (numberDecoders): a
// rebuild decodes hundreds of thousands of values, and a new decoder each
// time was a fifth of what a rebuild allocated.
func unmarshal(data []byte, v any) error {
	nd := numberDecoders.Get().(*numberDecoder)
	nd.r.Reset(data)
	nd.fed += int64(len(data))
	err := nd.dec.Decode(v)
	if err == nil && nd.dec.InputOffset() == nd.fed {
		nd.r.Reset(nil)
		numberDecoders.Put(nd)
	}
	// Otherwise the decoder keeps an error, or bytes after the value, that
	// the next value must not see: it is dropped.
	return err
}

// A numberDecoder is a json.Decoder with UseNumber over a reader that
// unmarshal points at each value in turn; fed counts the bytes it was
// given, all of which a decoder fit for the next value has consumed.
type numberDecoder struct {
	r   bytes.Reader
	dec *json.Decoder
	fed int64
}

var numberDecoders = sync.Pool{New: func() any {
	nd := &numberDecoder{}
	nd.dec = json.NewDecoder(&nd.r)
	nd.dec.UseNumber()
	return nd
}}
