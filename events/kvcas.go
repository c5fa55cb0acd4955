package events

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// A compare-and-set of a key (Create, Update, Delete at a revision) is
// decided by the leader of the bucket's stream, which answers one of:
//
//   - 10071 "wrong last sequence: N": the key's revision is N, not the one
//     given. Someone wrote the key since the caller read it: a conflict.
//   - 10164 "wrong last sequence" (no number, replicated buckets only): a
//     write of the same key is in flight at the leader, proposed and not
//     yet applied, so the leader cannot tell what the key's revision will
//     be. That write may be another writer's, or the caller's own earlier
//     one whose answer was lost; and because the leader answers a write
//     before it clears its in-flight mark, a compare-and-set sent right
//     after the answer to the previous write of the key can meet it too,
//     at the revision that write returned. The refused write was never
//     proposed, so sending it again cannot write twice.
//
// cas therefore sends a write refused with 10164 again, after a short
// pause, until the leader decides it (written, or 10071) or casBusyWindow
// passes; a key still busy then is another writer's, a conflict. And a
// write refused as a conflict, or whose answer did not come (a timeout, an
// election), is looked up at the leader: a key that holds exactly the value
// written is the caller's own write, and succeeds with its revision. Every
// value the engine writes by compare-and-set names its writer and the
// moment of writing, so an equal value is the same write, and a caller
// that finds its intended value in place has what it asked for.
//
// IMPORTANT: no caller sees ErrUnavailable for a refused compare-and-set:
// a refusal is ErrConflict, and the caller re-reads and decides.

// casBusyWindow bounds how long a compare-and-set refused because another
// write of its key is in flight (10164) is sent again: a write stays in
// flight for a replication round trip, milliseconds to a few hundred under
// load, unless the stream has lost its leader.
const casBusyWindow = 2 * time.Second

// refusal is how the bucket's leader refused a compare-and-set, if it did.
type refusal int

const (
	notRefused   refusal = iota
	refusedStale         // 10071: the key is at another revision
	refusedBusy          // 10164: another write of the key is in flight
)

// refusalOf classifies err from a key-value write. nats.go reports 10071
// as ErrKeyExists (Create) or ErrKeyRevisionMismatch (Update, Delete)
// wrapping the API error, and 10164 wrapped in either, or bare from the
// second write of a Create on a deleted key.
func refusalOf(err error) refusal {
	if err == nil {
		return notRefused
	}
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) {
		switch apiErr.ErrorCode {
		case jetstream.JSErrCodeStreamWrongLastSequenceConstant:
			return refusedBusy
		case jetstream.JSErrCodeStreamWrongLastSequence:
			return refusedStale
		}
	}
	if errors.Is(err, jetstream.ErrKeyExists) || errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
		return refusedStale
	}
	return notRefused
}

// cas sends write, a compare-and-set of key with value (nil for a
// delete), until the bucket's leader decides it, and returns the key's new
// revision or ErrConflict; see the comment at the top of this file.
func (k *KV) cas(ctx context.Context, key string, value []byte, write func(context.Context) (uint64, error)) (uint64, error) {
	ctx, cancel := withDefaultTimeout(ctx)
	defer cancel()
	if err := k.bound(); err != nil {
		return 0, err
	}
	deadline := time.Now().Add(casBusyWindow)
	for pause := 5 * time.Millisecond; ; pause = min(2*pause, 200*time.Millisecond) {
		rev, err := write(ctx)
		if err == nil {
			return rev, nil
		}
		why := refusalOf(err)
		if why == refusedBusy && time.Now().Add(pause).Before(deadline) {
			select {
			case <-time.After(pause):
				continue
			case <-ctx.Done():
				return 0, k.writeErr(key, err)
			}
		}
		if value != nil && !errors.Is(err, context.Canceled) {
			if rev, ok := k.holds(ctx, key, value); ok {
				return rev, nil
			}
		}
		if why == refusedBusy {
			return 0, fmt.Errorf("%w: %s/%s: another write of the key stayed in flight", ErrConflict, k.name, key)
		}
		return 0, k.writeErr(key, err)
	}
}

// holds reports whether key holds exactly value at the bucket's leader,
// and at which revision: a write of the caller's whose answer was lost. It
// reads past ctx's deadline, since a write that timed out is the case it
// is for, within casBusyWindow.
func (k *KV) holds(ctx context.Context, key string, value []byte) (uint64, bool) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), casBusyWindow)
	defer cancel()
	e, err := k.Latest(ctx, key)
	return e.Revision, err == nil && bytes.Equal(e.Value, value)
}

// writeErr is the error of a key-value write: ErrConflict for a refused
// compare-and-set, ErrStoreFull or ErrUnavailable otherwise.
func (k *KV) writeErr(key string, err error) error {
	if err == nil {
		return nil
	}
	if refusalOf(err) != notRefused {
		return fmt.Errorf("%w: %s/%s", ErrConflict, k.name, key)
	}
	return publishError(k.name+"/"+key, err)
}

// storedMsgGet is the body of $JS.API.STREAM.MSG.GET, which only the
// stream's leader answers (a direct get may be answered by a replica that
// lags).
type storedMsgGet struct {
	LastFor string `json:"last_by_subj"`
}

// storedMsgReply is its answer.
type storedMsgReply struct {
	Message *struct {
		Seq    uint64 `json:"seq"`
		Header []byte `json:"hdrs"`
		Data   []byte `json:"data"`
	} `json:"message"`
	Error *jetstream.APIError `json:"error"`
}

// Latest returns the current entry of key as the bucket's leader knows
// it, or ErrNotFound (a key deleted or never written). Get may be
// answered by a replica behind the leader; after a refused
// compare-and-set, Latest is the read that decides what to do next.
func (k *KV) Latest(ctx context.Context, key string) (Entry, error) {
	e, deleted, err := k.latest(ctx, key)
	if err == nil && deleted {
		return Entry{}, fmt.Errorf("%w: %s/%s", ErrNotFound, k.name, key)
	}
	return e, err
}

// latest is Latest telling a deleted key (or purged: its last message is
// the marker, whose revision e holds) from one never written (ErrNotFound).
func (k *KV) latest(ctx context.Context, key string) (e Entry, deleted bool, err error) {
	ctx, cancel := withDefaultTimeout(ctx)
	defer cancel()
	if err := k.bound(); err != nil {
		return Entry{}, false, err
	}
	req, err := json.Marshal(storedMsgGet{LastFor: "$KV." + k.name + "." + key})
	if err != nil {
		return Entry{}, false, err
	}
	msg, err := k.nc.RequestWithContext(ctx, "$JS.API.STREAM.MSG.GET.KV_"+k.name, req)
	if err != nil {
		return Entry{}, false, fmt.Errorf("%w: %s/%s: %v", ErrUnavailable, k.name, key, err)
	}
	var reply storedMsgReply
	if err := json.Unmarshal(msg.Data, &reply); err != nil {
		return Entry{}, false, fmt.Errorf("%w: %s/%s: %v", ErrUnavailable, k.name, key, err)
	}
	if reply.Error != nil {
		if reply.Error.ErrorCode == jetstream.JSErrCodeMessageNotFound {
			return Entry{}, false, fmt.Errorf("%w: %s/%s", ErrNotFound, k.name, key)
		}
		return Entry{}, false, fmt.Errorf("%w: %s/%s: %v", ErrUnavailable, k.name, key, reply.Error)
	}
	if reply.Message == nil {
		return Entry{}, false, fmt.Errorf("%w: %s/%s: an empty answer", ErrUnavailable, k.name, key)
	}
	e = Entry{Key: key, Value: reply.Message.Data, Revision: reply.Message.Seq}
	if len(reply.Message.Header) > 0 {
		h, err := nats.DecodeHeadersMsg(reply.Message.Header)
		if err != nil {
			return Entry{}, false, fmt.Errorf("%w: %s/%s: %v", ErrUnavailable, k.name, key, err)
		}
		if op := h.Get("KV-Operation"); op == "DEL" || op == "PURGE" {
			return Entry{Key: key, Revision: e.Revision}, true, nil
		}
	}
	return e, false, nil
}
