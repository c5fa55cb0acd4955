package executor

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/internal/proc"
)

// stepLease is a worker's claim on executing one step attempt, in
// orbit_leases. It is what keeps two copies of a step from running at once
// when a worker stops answering (a stopped process, a partition): its
// command is redelivered after the ack wait, but another worker runs it
// only when the lease has expired — and first, on the same host, kills the
// processes the silent worker had started for it (fencing): every program
// an execution starts, and all they start, carry the lease's scope in
// their environment (proc.WithScope). A worker whose
// lease was taken over records nothing of its late result.
//
// The zero stepLease (kv nil) is held by definition and does nothing: the
// lease of a worker that is the only one.
type stepLease struct {
	kv     *events.KV
	key    string
	ttl    time.Duration
	engine string

	mu  sync.Mutex
	rev uint64
	rec stepLeaseRecord
}

type stepLeaseRecord struct {
	Engine  string    `json:"engine"`
	Host    string    `json:"host"`
	Scope   string    `json:"scope"` // the mark of the processes the execution starts
	Expires time.Time `json:"expires"`
}

// errStepBusy: another worker's lease on the attempt is still live.
var errStepBusy = errors.New("another worker is running this step")

var hostname, _ = os.Hostname()

func stepLeaseKey(cmd *stepCommand) string {
	sum := sha256.Sum256([]byte(cmd.RunID + "|" + cmd.StepKey + "|" + strconv.Itoa(cmd.Attempt)))
	return "step." + hex.EncodeToString(sum[:16])
}

// acquire takes the lease. A live lease of another worker is errStepBusy;
// an expired one is taken over after fencing its processes.
func (l *stepLease) acquire(ctx context.Context) error {
	if l.kv == nil {
		return nil
	}
	l.rec = stepLeaseRecord{Engine: l.engine, Host: hostname, Scope: proc.NewScope(), Expires: time.Now().Add(l.ttl).UTC()}
	value, err := json.Marshal(l.rec)
	if err != nil {
		return err
	}
	cur, err := l.kv.Get(ctx, l.key)
	if errors.Is(err, events.ErrNotFound) {
		l.rev, err = l.kv.Create(ctx, l.key, value)
		if errors.Is(err, events.ErrConflict) {
			return errStepBusy
		}
		return err
	}
	if err != nil {
		return err
	}
	var held stepLeaseRecord
	if json.Unmarshal(cur.Value, &held) == nil && held.Engine != l.engine {
		if time.Now().Before(held.Expires) {
			return fmt.Errorf("%w: %s until %s", errStepBusy, held.Engine, held.Expires.Format(time.RFC3339))
		}
		fence(held)
	}
	l.rev, err = l.kv.Update(ctx, l.key, value, cur.Revision)
	if errors.Is(err, events.ErrConflict) {
		return errStepBusy
	}
	return err
}

// fence kills what is left of an expired holder's activity, when it ran on
// this host, and waits until none of it runs: its processes must not run
// alongside the new copy. (A process stuck in uninterruptible sleep is
// waited for a few seconds; it dies as soon as that sleep ends.)
func fence(held stepLeaseRecord) {
	if held.Scope != "" && held.Host == hostname {
		proc.KillScope(held.Scope, 5*time.Second)
	}
}

// within returns ctx under which the programs the execution starts carry
// the lease's scope.
func (l *stepLease) within(ctx context.Context) context.Context {
	if l.kv == nil {
		return ctx
	}
	return proc.WithScope(ctx, l.rec.Scope)
}

// renew extends the lease, failing with events.ErrConflict when another
// worker took it over.
func (l *stepLease) renew(ctx context.Context) error {
	if l.kv == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.rec.Expires = time.Now().Add(l.ttl).UTC()
	value, err := json.Marshal(l.rec)
	if err != nil {
		return err
	}
	rev, err := l.kv.Update(ctx, l.key, value, l.rev)
	if err != nil {
		return err
	}
	l.rev = rev
	return nil
}

// held reports whether the lease is still this worker's.
func (l *stepLease) held(ctx context.Context) bool {
	if l.kv == nil {
		return true
	}
	cur, err := l.kv.Get(ctx, l.key)
	l.mu.Lock()
	defer l.mu.Unlock()
	return err == nil && cur.Revision == l.rev
}

func (l *stepLease) release(ctx context.Context) {
	if l.kv == nil {
		return
	}
	l.mu.Lock()
	rev := l.rev
	l.mu.Unlock()
	_ = l.kv.Delete(ctx, l.key, rev)
}
