package executor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/orbitrun/orbit/events"
)

// A paused job (orbit job pause) is key jobpause.<job> of orbit_leases,
// absent while the job is not paused: the bucket every engine's admission
// already reads by compare-and-set when it takes a slot, so every engine
// of a cluster honours the pause from its next admission, and it holds
// across restarts. Its runs are requested and queued, not started, until
// the key is deleted; runs already started are not affected.

const jobPausePrefix = "jobpause."

func jobPauseKey(job string) string { return jobPausePrefix + events.Token(job) }

// JobPause is who paused a job, when and why.
type JobPause struct {
	Job       string    `json:"job"`
	At        time.Time `json:"at"`
	Requester string    `json:"requester,omitempty"`
	Reason    string    `json:"reason,omitempty"`
}

// PauseJob pauses p.Job, or with pause false unpauses it; it reports
// whether that changed anything.
func PauseJob(ctx context.Context, log *events.Log, pause bool, p JobPause) (bool, error) {
	kv := log.Leases()
	key := jobPauseKey(p.Job)
	for range 8 {
		cur, err := kv.Get(ctx, key)
		if err != nil && !errors.Is(err, events.ErrNotFound) {
			return false, err
		}
		held := err == nil
		if held == pause {
			return false, nil
		}
		if pause {
			data, merr := json.Marshal(p)
			if merr != nil {
				return false, merr
			}
			_, err = kv.Create(ctx, key, data)
		} else {
			err = kv.Delete(ctx, key, cur.Revision)
		}
		if errors.Is(err, events.ErrConflict) {
			continue
		}
		return err == nil, err
	}
	return false, fmt.Errorf("job %s: %w: its pause kept changing", p.Job, events.ErrConflict)
}

// JobPaused returns job's pause, nil when it is not paused.
func JobPaused(ctx context.Context, log *events.Log, job string) (*JobPause, error) {
	e, err := log.Leases().Get(ctx, jobPauseKey(job))
	if errors.Is(err, events.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var p JobPause
	if err := json.Unmarshal(e.Value, &p); err != nil {
		return nil, fmt.Errorf("job %s: its pause: %w", job, err)
	}
	return &p, nil
}

// PausedJobs returns every paused job, by name.
func PausedJobs(ctx context.Context, log *events.Log) ([]JobPause, error) {
	keys, err := log.Leases().Keys(ctx)
	if err != nil {
		return nil, err
	}
	out := []JobPause{}
	for _, k := range keys {
		if !strings.HasPrefix(k, jobPausePrefix) {
			continue
		}
		e, err := log.Leases().Get(ctx, k)
		if errors.Is(err, events.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		var p JobPause
		if err := json.Unmarshal(e.Value, &p); err != nil {
			return nil, fmt.Errorf("%s: %w", k, err)
		}
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Job < out[j].Job })
	return out, nil
}

// On an embedded store the orchestrator keeps whether each job is paused
// once it has read its key: the file lock on the views lets one engine
// write orbit_leases, and that engine's pause endpoint changes a pause
// through Orchestrator.PauseJob, which forgets what was kept of the job.
// Admission read the key for every run, holding o.mu, in the chain in
// which each run is admitted after the one before it: a round trip to the
// server per run that no two runs could overlap (W3, issue 29; see
// docs/architecture/runs.md, "Where a run's time goes"). On a shared
// server another engine may pause a job at any moment: every admission
// reads the key.
type pauses struct {
	mu     sync.Mutex
	paused map[string]bool // a job's key (names that make one key share it) → paused, as last read
	gen    uint64          // counts the forgets: a read begun before one is not kept
}

// jobPaused reports whether job is paused; a bucket that does not answer
// counts as not paused (logged): a run it holds would otherwise wait for
// a kick that may not come.
func (o *Orchestrator) jobPaused(ctx context.Context, job string) bool {
	keep := !o.shared()
	var gen uint64
	if keep {
		o.pauses.mu.Lock()
		paused, known := o.pauses.paused[jobPauseKey(job)]
		gen = o.pauses.gen
		o.pauses.mu.Unlock()
		if known {
			return paused
		}
	}
	p, err := JobPaused(ctx, o.cfg.Log, job)
	if err != nil {
		o.log.Warn("reading whether a job is paused", "job", job, "err", err)
		return false
	}
	if keep {
		o.pauses.mu.Lock()
		if o.pauses.gen == gen {
			if o.pauses.paused == nil {
				o.pauses.paused = map[string]bool{}
			}
			o.pauses.paused[jobPauseKey(job)] = p != nil
		}
		o.pauses.mu.Unlock()
	}
	return p != nil
}

// forgetPause makes the next admission of a run of job read its pause
// again.
func (o *Orchestrator) forgetPause(job string) {
	o.pauses.mu.Lock()
	defer o.pauses.mu.Unlock()
	delete(o.pauses.paused, jobPauseKey(job))
	o.pauses.gen++
}

// PauseJob is the package's PauseJob for this orchestrator's engine: what
// the orchestrator kept of the job's pause is forgotten, whatever the
// outcome (a write that failed may still have been stored), and the
// queue of a job it unpaused is tried at once.
func (o *Orchestrator) PauseJob(ctx context.Context, pause bool, p JobPause) (bool, error) {
	changed, err := PauseJob(ctx, o.cfg.Log, pause, p)
	o.forgetPause(p.Job)
	if err == nil && changed && !pause {
		o.jobUnpaused(p.Job)
	}
	return changed, err
}

// jobUnpaused tries the queue of a job that was unpaused at once (other
// engines of a cluster try theirs again within their lease period).
func (o *Orchestrator) jobUnpaused(job string) {
	if o.shared() {
		o.kick(job)
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.runCtx != nil && o.runCtx.Err() == nil {
		o.startAdmissibleLocked(o.runCtx, job)
	}
}
