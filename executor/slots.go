package executor

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"time"

	"github.com/orbitrun/orbit/events"
)

// Slots of max_active_runs shared by every engine of a NATS server (DESIGN
// §9): slot n of job j is key slot.<j>.<n> of the orbit_leases bucket,
// whose value names the run that holds it. A run takes a free slot by
// compare-and-set, so two engines never give one slot to two runs; it
// gives the slot back when it finishes. A slot whose run finished without
// giving it back (its engine died after run.finished), or that a run took
// but never started within a lease TTL (its engine died in between), is
// free. A started run whose engine died keeps its slot: the engine that
// takes the run over runs it in that slot.
//
// On an embedded store one engine runs, and its own count is the limit.

type slotRecord struct {
	Run   string    `json:"run"`
	Taken time.Time `json:"taken"`
}

func slotKey(job string, n int) string {
	return "slot." + events.Token(job) + "." + strconv.Itoa(n)
}

// shared reports whether slots are shared between engines.
func (o *Orchestrator) shared() bool { return !o.cfg.Log.Embedded() }

// takeSlot gives rc one of its job's slots, or reports false when they are
// all held (or the bucket does not answer: the run waits and is tried
// again).
func (o *Orchestrator) takeSlot(ctx context.Context, rc *runCtl) bool {
	kv := o.cfg.Log.Leases()
	value, err := json.Marshal(slotRecord{Run: rc.id, Taken: time.Now().UTC()})
	if err != nil {
		return false
	}
	for n := range maxActive(rc.job) {
		key := slotKey(rc.job.Name, n)
		cur, err := kv.Get(ctx, key)
		if errors.Is(err, events.ErrNotFound) {
			if _, err := kv.Create(ctx, key, value); err == nil {
				return true
			}
			continue
		}
		if err != nil {
			o.log.Warn("reading a run slot", "slot", key, "err", err)
			return false
		}
		var held slotRecord
		if json.Unmarshal(cur.Value, &held) == nil && held.Run == rc.id {
			return true
		}
		if !o.slotFree(ctx, held) {
			continue
		}
		if _, err := kv.Update(ctx, key, value, cur.Revision); err == nil {
			return true
		}
	}
	return false
}

// slotFree reports whether the run holding a slot no longer needs it.
func (o *Orchestrator) slotFree(ctx context.Context, held slotRecord) bool {
	if held.Run == "" {
		return true
	}
	finished, err := o.cfg.Log.LastMatching(ctx, []string{events.EventSubject(events.AggregateRun, held.Run, events.RunFinished)})
	if err != nil {
		return false
	}
	if finished > 0 {
		return true
	}
	if time.Since(held.Taken) < o.cfg.LeaseTTL {
		return false
	}
	started, err := o.cfg.Log.LastMatching(ctx, []string{events.EventSubject(events.AggregateRun, held.Run, events.RunStarted)})
	return err == nil && started == 0
}

// giveSlot frees the slot rc holds, if any.
func (o *Orchestrator) giveSlot(ctx context.Context, rc *runCtl) {
	kv := o.cfg.Log.Leases()
	for n := range maxActive(rc.job) {
		key := slotKey(rc.job.Name, n)
		cur, err := kv.Get(ctx, key)
		if err != nil {
			continue
		}
		var held slotRecord
		if json.Unmarshal(cur.Value, &held) == nil && held.Run == rc.id {
			if err := kv.Delete(ctx, key, cur.Revision); err != nil && !errors.Is(err, events.ErrConflict) {
				o.log.Warn("freeing a run slot", "slot", key, "err", err)
			}
			return
		}
	}
}

// startAdmissible starts, in arrival order, the queued runs that may start
// now. The caller holds o.mu.
func (o *Orchestrator) startAdmissibleLocked(ctx context.Context, job string) {
	for i := 0; i < len(o.queued[job]); {
		next := o.queued[job][i]
		if !o.admissibleLocked(ctx, next) {
			i++
			continue
		}
		o.queued[job] = append(o.queued[job][:i:i], o.queued[job][i+1:]...)
		o.startLocked(ctx, next)
	}
}

// retryQueued tries every queued run again: a slot another engine freed
// reaches no one otherwise.
func (o *Orchestrator) retryQueued(ctx context.Context) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for job := range o.queued {
		o.startAdmissibleLocked(ctx, job)
	}
}
