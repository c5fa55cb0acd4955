package lease

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/internal/proc"
)

// Lease is a claim in the orbit_leases bucket: an engine's on a run (only
// the holder interprets it) or a worker's on a step attempt (only the
// holder executes it). A lease that is not renewed within its TTL may be
// taken over.
//
// TakeOver takes a lease of another engine id at once, as the claim of a
// dead engine (retention's on an embedded store).
//
// A step lease is what keeps two copies of a step from running at once when
// a worker stops answering (a stopped process, a partition): its command is
// redelivered after the ack wait, but another worker runs it only when the
// lease has expired — and first, on the same host, kills the processes the
// silent worker had started for it (fencing): every program an execution
// starts, and all they start, carry the lease's scope in their environment
// (proc.WithScope). A worker whose lease was taken over records nothing of
// its late result. On an embedded store, where the file lock lets one
// engine run, run and step leases have no KV: they are held by definition
// and do nothing.
//
// The fields are set before the first call and not changed after it.
type Lease struct {
	KV       *events.KV    // the leases bucket; nil: a lease held by definition
	Key      string        // run.<id> or step.<hash of run, step, attempt>
	Engine   string        // the holder
	TTL      time.Duration // how long the lease holds without a renewal
	TakeOver bool          // steal leases of other engines without waiting for expiry
	Scope    string        // step leases: the mark of the processes the execution starts
	Fence    bool          // before taking over an expired lease, kill its holder's processes on this host

	mu      sync.Mutex // renewals run beside the holder's other calls
	rev     uint64
	written time.Time // when rev was written: the lease holds until a TTL later
}

// Record is a lease's value in the bucket.
type Record struct {
	Engine  string    `json:"engine"`
	Host    string    `json:"host,omitempty"`
	Scope   string    `json:"scope,omitempty"`
	Expires time.Time `json:"expires"`
}

var hostname, _ = os.Hostname()

// Acquire takes the lease, waiting (and retrying) while a live engine holds it.
func (l *Lease) Acquire(ctx context.Context) error {
	for {
		err := l.Try(ctx)
		if !errors.Is(err, ErrHeld) && !errors.Is(err, events.ErrConflict) {
			return err
		}
		select {
		case <-time.After(l.TTL / 3):
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
}

// Try takes the lease once. A live lease of another engine is ErrHeld;
// losing a race for it is events.ErrConflict.
func (l *Lease) Try(ctx context.Context) error {
	if l.KV == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	at := time.Now()
	value, err := l.record(at)
	if err != nil {
		return err
	}
	// Read at the bucket's leader: a replica behind it would give a
	// revision the compare-and-set below is refused for, and a step or
	// run would wait for its next try though the lease was free.
	cur, err := l.KV.Latest(ctx, l.Key)
	if errors.Is(err, events.ErrNotFound) {
		l.rev, err = l.KV.Create(ctx, l.Key, value)
		l.written = at
		return err
	}
	if err != nil {
		return err
	}
	var held Record
	if json.Unmarshal(cur.Value, &held) == nil && held.Engine != l.Engine {
		if !l.TakeOver && time.Now().Before(held.Expires) {
			return &HeldError{Holder: held.Engine, Until: held.Expires}
		}
		if l.Fence && held.Scope != "" && held.Host == hostname {
			// A process stuck in uninterruptible sleep is waited for a
			// few seconds; it dies as soon as that sleep ends.
			proc.KillScope(held.Scope, 5*time.Second)
		}
	}
	l.rev, err = l.KV.Update(ctx, l.Key, value, cur.Revision)
	l.written = at
	return err
}

// HeldError is ErrHeld from Try: the lease is Holder's until it lapses,
// at Until unless renewed.
type HeldError struct {
	Holder string
	Until  time.Time
}

func (e *HeldError) Error() string {
	return fmt.Sprintf("%v: %s until %s", ErrHeld, e.Holder, e.Until.Format(time.RFC3339))
}

func (e *HeldError) Unwrap() error { return ErrHeld }

// record is the lease's value, expiring a TTL after at.
func (l *Lease) record(at time.Time) ([]byte, error) {
	return json.Marshal(Record{Engine: l.Engine, Host: hostname, Scope: l.Scope, Expires: at.Add(l.TTL).UTC()})
}

// Renew extends the lease. It fails with events.ErrConflict when another
// engine took the lease over.
func (l *Lease) Renew(ctx context.Context) error {
	if l.KV == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.write(ctx)
}

// write extends the lease by a compare-and-set at its last known
// revision, which the bucket's leader checks: never a read that a lagging
// replica answers. A conflict whose current value at the leader is this
// very lease (same scope) is a write of ours whose answer was lost in an
// earlier call, a timeout under load say (within one call events.KV
// recognises its own write): its revision is taken and the write done
// again, so that only a lease another holder wrote counts as lost. l.mu
// is held.
func (l *Lease) write(ctx context.Context) error {
	at := time.Now()
	value, err := l.record(at)
	if err != nil {
		return err
	}
	rev := l.rev
	for range 5 {
		var newRev uint64
		newRev, err = l.KV.Update(ctx, l.Key, value, rev)
		if err == nil {
			l.rev, l.written = newRev, at
			return nil
		}
		if !errors.Is(err, events.ErrConflict) || l.Scope == "" {
			return err
		}
		cur, gerr := l.KV.Latest(ctx, l.Key)
		var held Record
		if gerr != nil || json.Unmarshal(cur.Value, &held) != nil || held.Engine != l.Engine || held.Scope != l.Scope {
			return err
		}
		if cur.Revision == rev {
			time.Sleep(20 * time.Millisecond) // the write that conflicted is not applied yet
		}
		rev = cur.Revision
	}
	return err
}

// Held reports whether the lease is still this holder's, extending it for
// the holder's next writes. A step's result is stored only if it is: the
// answer comes from a compare-and-set, not from a read that a lagging
// replica answers, and a write that fails without a conflict (an election,
// a timeout under load) is tried again until the lease would have expired
// since its last renewal; only then is it given up as lost. An expired
// lease that no one took over is still this holder's: a takeover is a
// write, which the compare-and-set would meet.
func (l *Lease) Held(ctx context.Context) bool {
	if l.KV == nil {
		return true
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	expires := l.written.Add(l.TTL)
	for wait := 50 * time.Millisecond; ; wait = min(2*wait, time.Second) {
		err := l.write(ctx)
		if err == nil {
			return true
		}
		if errors.Is(err, events.ErrConflict) || time.Now().Add(wait).After(expires) {
			return false
		}
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			return false
		}
	}
}

// Release gives the lease up. A conflict whose current value at the
// bucket's leader is still this holder's (a renewal whose answer was
// lost, its call cancelled say) gives it up at that revision: only a
// lease another holder wrote is left alone.
func (l *Lease) Release(ctx context.Context) error {
	if l.KV == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	err := l.KV.Delete(ctx, l.Key, l.rev)
	if !errors.Is(err, events.ErrConflict) {
		return err
	}
	cur, gerr := l.KV.Latest(ctx, l.Key)
	var held Record
	if gerr != nil || json.Unmarshal(cur.Value, &held) != nil || held.Engine != l.Engine || held.Scope != l.Scope {
		return err
	}
	return l.KV.Delete(ctx, l.Key, cur.Revision)
}

// Within returns ctx under which the programs an execution starts carry
// the lease's scope.
func (l *Lease) Within(ctx context.Context) context.Context {
	if l.Scope == "" {
		return ctx
	}
	return proc.WithScope(ctx, l.Scope)
}

// Hold renews the lease until ctx ends, and calls lost if it cannot (another
// engine took it over, or the store stayed unreachable past the TTL).
func (l *Lease) Hold(ctx context.Context, lost func(error)) {
	if l.KV == nil {
		return // held by definition: never lost
	}
	tick := time.NewTicker(l.TTL / 3)
	defer tick.Stop()
	lastOK := time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			err := l.Renew(ctx)
			switch {
			case err == nil:
				lastOK = time.Now()
			case errors.Is(err, events.ErrConflict) || time.Since(lastOK) > l.TTL:
				lost(err)
				return
			}
		}
	}
}
