package executor

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"time"

	"github.com/orbitrun/orbit/assets"
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
	Run    string    `json:"run"`
	Engine string    `json:"engine,omitempty"`
	Taken  time.Time `json:"taken"`
}

// claim is what an attempt to take a slot for a run found.
type claim int

const (
	claimFull      claim = iota // every slot is held: the run waits
	claimTaken                  // this engine holds a slot for the run
	claimElsewhere              // another engine holds a slot for the run
)

func slotKey(job string, n int) string {
	return "slot." + events.Token(job) + "." + strconv.Itoa(n)
}

// lentKey is the one slot a run of job lends to a descendant of its job
// (see borrowsLocked).
func lentKey(job, lender string) string {
	return "slot." + events.Token(job) + ".lent." + events.Token(lender)
}

func slotKeys(job *assets.Job) []string {
	keys := make([]string, maxActive(job))
	for n := range keys {
		keys[n] = slotKey(job.Name, n)
	}
	return keys
}

// shared reports whether slots are shared between engines.
func (o *Orchestrator) shared() bool { return !o.cfg.Log.Embedded() }

// takeSlot gives rc one of its job's slots, or reports false when they are
// all held, held for rc by another engine, or the bucket does not answer
// (the run waits and is tried again).
func (o *Orchestrator) takeSlot(ctx context.Context, rc *runCtl) bool {
	return o.claimSlot(ctx, rc, slotKeys(rc.job), len(slotKeys(rc.job))) == claimTaken
}

// claimSlot takes one of the first n of keys for rc by compare-and-set. A
// key of keys that already names rc is the run's whoever wrote it, until
// it is free (see slotFree): so two engines that try to admit one queued
// run at once never both start it, and a run never holds two slots.
func (o *Orchestrator) claimSlot(ctx context.Context, rc *runCtl, keys []string, n int) claim {
	kv := o.cfg.Log.Leases()
	value, err := json.Marshal(slotRecord{Run: rc.id, Engine: o.cfg.Engine, Taken: time.Now().UTC()})
	if err != nil {
		return claimFull
	}
	type slot struct {
		key  string
		held slotRecord
		rev  uint64 // 0: missing
	}
	slots := make([]slot, 0, len(keys))
	for i, key := range keys {
		cur, err := kv.Get(ctx, key)
		if errors.Is(err, events.ErrNotFound) {
			if i < n {
				slots = append(slots, slot{key: key})
			}
			continue
		}
		if err != nil {
			o.log.Warn("reading a run slot", "slot", key, "err", err)
			return claimFull
		}
		s := slot{key: key, rev: cur.Revision}
		_ = json.Unmarshal(cur.Value, &s.held)
		if s.held.Run == rc.id {
			if s.held.Engine == o.cfg.Engine {
				return claimTaken
			}
			if !o.slotFree(ctx, s.held) {
				return claimElsewhere
			}
			slots = append([]slot{s}, slots...) // the run's own key first
			continue
		}
		if i < n {
			slots = append(slots, s)
		}
	}
	for _, s := range slots {
		if s.rev != 0 && s.held.Run != rc.id && !o.slotFree(ctx, s.held) {
			continue
		}
		if c := o.writeSlot(ctx, rc, s.key, s.rev, value); c != claimFull {
			return c
		}
	}
	return claimFull
}

// writeSlot writes value, rc's claim, to slot key at revision rev (0: a
// missing key). A refused or unanswered write is decided by the slot as
// the bucket's leader holds it (a replica may not have the write that
// refused it yet): naming rc and this engine, it is this engine's write
// whose answer was lost (taken); naming rc and another engine, that
// engine won the race for the run (elsewhere); held by a run that needs
// it, it is full; gone, or held by a run that no longer needs it, it is
// written once more at what the leader holds — the write that refused
// ours may have freed it (the finished run's engine deleting it while
// ours was read from a replica that still had it), and waiting for the
// next admission tick would leave it free for seconds.
func (o *Orchestrator) writeSlot(ctx context.Context, rc *runCtl, key string, rev uint64, value []byte) claim {
	kv := o.cfg.Log.Leases()
	for try := 0; try < 2; try++ {
		var err error
		if rev == 0 {
			_, err = kv.Create(ctx, key, value)
		} else {
			_, err = kv.Update(ctx, key, value, rev)
		}
		if err == nil {
			rc.slot = key
			return claimTaken
		}
		cur, err := kv.Latest(ctx, key)
		if errors.Is(err, events.ErrNotFound) {
			rev = 0
			continue
		}
		if err != nil {
			return claimFull
		}
		var held slotRecord
		_ = json.Unmarshal(cur.Value, &held)
		switch {
		case held.Run == rc.id && held.Engine == o.cfg.Engine:
			rc.slot = key
			return claimTaken
		case held.Run == rc.id:
			return claimElsewhere
		case !o.slotFree(ctx, held):
			return claimFull
		}
		rev = cur.Revision
	}
	return claimFull
}

// slotFree reports whether the run holding a slot no longer needs it.
func (o *Orchestrator) slotFree(ctx context.Context, held slotRecord) bool {
	if held.Run == "" {
		return true
	}
	finished, err := o.sinceRaise(ctx, held.Run, events.RunFinished)
	if err != nil {
		return false
	}
	if finished {
		return true
	}
	// A run that took its slot holds its lease from its first moment: a
	// slow start (its history read, under load) keeps the slot while the
	// lease lives.
	if time.Since(held.Taken) < o.cfg.LeaseTTL || !o.orphaned(ctx, held.Run) {
		return false
	}
	started, err := o.sinceRaise(ctx, held.Run, events.RunStarted, events.RunResumed)
	return err == nil && !started
}

// giveSlot frees the slot rc holds, if any: the one it took, or for a run
// taken over (which took none here) the one of its job's slots naming it.
//
// IMPORTANT: a run whose budget was raised as it ended is live again, and
// another engine may already have taken a slot for its resumption (slotFree
// finds the run finished and its lease gone before this engine gets here).
// That slot names the run too, but it is the resumed run's: freeing it would
// let this engine start the run a second time and a third run take the
// slot. So a slot another engine wrote is left alone once the run has been
// raised since its last end; a stale one is freed by slotFree in time.
func (o *Orchestrator) giveSlot(ctx context.Context, rc *runCtl) {
	kv := o.cfg.Log.Leases()
	keys := slotKeys(rc.job)
	if rc.slot != "" {
		keys = []string{rc.slot}
	}
	for _, key := range keys {
		cur, err := kv.Get(ctx, key)
		if err != nil {
			continue
		}
		var held slotRecord
		if json.Unmarshal(cur.Value, &held) == nil && held.Run == rc.id {
			if held.Engine != o.cfg.Engine && o.raisedSinceEnd(ctx, rc.id) {
				return
			}
			if err := kv.Delete(ctx, key, cur.Revision); err != nil && !errors.Is(err, events.ErrConflict) {
				o.log.Warn("freeing a run slot", "slot", key, "err", err)
			}
			return
		}
	}
}

// raisedSinceEnd reports whether run id's budget was raised after its last
// run.finished: it is live again. A log that cannot be read counts as
// raised, so that a slot is kept rather than freed under a running run.
func (o *Orchestrator) raisedSinceEnd(ctx context.Context, id string) bool {
	finished, err := o.sinceRaise(ctx, id, events.RunFinished)
	if err != nil {
		return true
	}
	if finished {
		return false
	}
	raised, err := o.cfg.Log.LastMatching(ctx, []string{events.EventSubject(events.AggregateRun, id, events.RunBudgetRaised)})
	return err != nil || raised > 0
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
	if o.shared() {
		o.kickAll()
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	for job := range o.queued {
		o.startAdmissibleLocked(ctx, job)
	}
}
