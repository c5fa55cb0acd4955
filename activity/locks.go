package activity

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/orbitrun/orbit/assets"
	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/interpreter"
)

// Task lock reservations live in one record of orbit_locks, changed only by
// compare-and-set: two runs reserving overlapping resources at the same time
// cannot both win, whatever the resources (a glob overlapping another is
// not a key collision, so per-key creation would not do).
const reservationsKey = "reservations"

// reservation is one resource held by a run.
type reservation struct {
	Owner    string    `json:"owner"` // the run
	Step     string    `json:"step"`
	Acquired time.Time `json:"acquired"`
	Expires  time.Time `json:"expires,omitzero"` // zero: until the run ends
}

// lockConfig is the config of locks.reserve and locks.release.
type lockConfig struct {
	Tasks      []string `json:"tasks"`       // task ids
	Paths      []string `json:"paths"`       // file globs (doublestar, relative to the workspace)
	TTLSeconds int      `json:"ttl_seconds"` // reserve: how long, at most (0: until the run ends)
}

func (c lockConfig) resources() []string {
	var out []string
	for _, t := range c.Tasks {
		out = append(out, "task:"+t)
	}
	for _, p := range c.Paths {
		out = append(out, "files:"+p)
	}
	return out
}

// locks reserves and releases resources for runs.
type locks struct {
	kv *events.KV
	// finished reports whether a run has reached a terminal state.
	finished func(ctx context.Context, runID string) (bool, error)
}

func newLocks(log *events.Log) *locks {
	return &locks{kv: log.Locks(), finished: func(ctx context.Context, runID string) (bool, error) {
		last, err := log.LastMatching(ctx, []string{events.EventSubject(events.AggregateRun, runID, events.RunFinished)})
		return last > 0, err
	}}
}

// reserve takes resources for a run. A resource that conflicts with one
// held by another live run fails the call, naming the holder; a holder run
// that has finished, or a reservation past its TTL, is stale and taken
// back. Reserving what the run already holds renews it.
func (l *locks) reserve(ctx context.Context, runID, step string, resources []string, ttl time.Duration) ([]string, error) {
	holder, err := l.tryReserve(ctx, runID, step, resources, ttl)
	if err == nil && holder != "" {
		err = interpreter.Fail(events.KindActivity, true, "%s", holder)
	}
	return nil, err
}

// tryReserve is reserve that says who holds a conflicting resource ("" when
// the resources were taken) instead of failing.
func (l *locks) tryReserve(ctx context.Context, runID, step string, resources []string, ttl time.Duration) (string, error) {
	conflicts, err := l.reserveAll(ctx, runID, step, resources, ttl)
	if err != nil || len(conflicts) == 0 {
		return "", err
	}
	c := conflicts[0]
	return fmt.Sprintf("%s is held by run %s (step %s) since %s; it overlaps %s",
		c.Held, c.Owner, c.Step, c.Acquired.Format(time.RFC3339), c.Want), nil
}

// reserveAll takes resources for a run, all or none: when another live run
// holds any of them it takes nothing and returns every conflict, in the
// order of resources and then of the held resources' names.
func (l *locks) reserveAll(ctx context.Context, runID, step string, resources []string, ttl time.Duration) ([]Conflict, error) {
	var conflicts []Conflict
	return conflicts, l.change(ctx, func(held map[string]reservation) error {
		conflicts = conflicts[:0]
		now := time.Now().UTC()
		live := liveness{l: l, now: now, done: map[string]bool{}}
		for _, want := range resources {
			for _, res := range sortedResources(held) {
				h, ok := held[res]
				if !ok || h.Owner == runID || !overlaps(want, res) {
					continue
				}
				alive, err := live.holds(ctx, h)
				if err != nil {
					return err
				}
				if !alive {
					delete(held, res)
					continue
				}
				conflicts = append(conflicts, Conflict{Want: want, Held: res, Owner: h.Owner, Step: h.Step, Acquired: h.Acquired})
			}
		}
		if len(conflicts) > 0 {
			return errUnchanged
		}
		for _, want := range resources {
			r := reservation{Owner: runID, Step: step, Acquired: now}
			if ttl > 0 {
				r.Expires = now.Add(ttl)
			}
			held[want] = r
		}
		return nil
	})
}

// liveness tells live reservations from stale ones (past their TTL, or
// of a run that has finished), asking the log about each owner once.
type liveness struct {
	l    *locks
	now  time.Time
	done map[string]bool // owner run → finished
}

func (v *liveness) holds(ctx context.Context, h reservation) (bool, error) {
	if !h.Expires.IsZero() && v.now.After(h.Expires) {
		return false, nil
	}
	finished, seen := v.done[h.Owner]
	if !seen {
		var err error
		if finished, err = v.l.finished(ctx, h.Owner); err != nil {
			return false, err
		}
		v.done[h.Owner] = finished
	}
	return !finished, nil
}

func sortedResources(held map[string]reservation) []string {
	names := make([]string, 0, len(held))
	for res := range held {
		names = append(names, res)
	}
	sort.Strings(names)
	return names
}

// release gives back resources of a run (all of them when resources is
// empty).
func (l *locks) release(ctx context.Context, runID string, resources []string) ([]string, error) {
	var released []string
	err := l.change(ctx, func(held map[string]reservation) error {
		released = released[:0]
		for res, h := range held {
			if h.Owner == runID && (len(resources) == 0 || slices.Contains(resources, res)) {
				delete(held, res)
				released = append(released, res)
			}
		}
		if len(released) == 0 {
			return errUnchanged
		}
		return nil
	})
	sort.Strings(released)
	return released, err
}

// errUnchanged tells change that there is nothing to write.
var errUnchanged = errors.New("unchanged")

// change applies a change to the reservations by compare-and-set, retrying
// when another writer got there first: after a conflict the record is read
// again at the bucket's leader, which has the write that refused ours (a
// replica may not), and the change applied to it anew. A write of ours
// whose answer was lost is recognised by events.KV; one lost in an earlier
// call is in the record, and applying the change again finds it there
// (the run already holds what it reserves, or no longer what it releases).
func (l *locks) change(ctx context.Context, apply func(map[string]reservation) error) error {
	read := l.kv.Get
	for try := 0; try < 20; try++ {
		held := map[string]reservation{}
		cur, err := read(ctx, reservationsKey)
		switch {
		case errors.Is(err, events.ErrNotFound):
		case err != nil:
			return err
		default:
			if err := json.Unmarshal(cur.Value, &held); err != nil {
				return fmt.Errorf("orbit_locks %s: %w", reservationsKey, err)
			}
		}
		if err := apply(held); errors.Is(err, errUnchanged) {
			return nil
		} else if err != nil {
			return err
		}
		value, err := json.Marshal(held)
		if err != nil {
			return err
		}
		if cur.Revision == 0 {
			_, err = l.kv.Create(ctx, reservationsKey, value)
		} else {
			_, err = l.kv.Update(ctx, reservationsKey, value, cur.Revision)
		}
		if !errors.Is(err, events.ErrConflict) {
			return err
		}
		read = l.kv.Latest
	}
	return errors.New("orbit_locks: too much contention; try again")
}

// overlaps reports whether two resources cannot be held by two runs at
// once: the same task, or file globs that may match a common path. Globs
// are compared conservatively by their literal prefixes: `src/**` and
// `src/a.go` overlap, `src/**` and `docs/**` do not, `*.go` overlaps any
// glob.
func overlaps(a, b string) bool {
	if a == b {
		return true
	}
	pa, aok := strings.CutPrefix(a, "files:")
	pb, bok := strings.CutPrefix(b, "files:")
	if !aok || !bok {
		return false
	}
	la, lb := literalPrefix(pa), literalPrefix(pb)
	return strings.HasPrefix(la, lb) || strings.HasPrefix(lb, la)
}

// literalPrefix is a glob up to its first meta character; a glob with no
// meta character is a path, compared whole (plus a slash, so that `src`
// also covers `src/a.go` but `srcx` does not).
func literalPrefix(glob string) string {
	if i := strings.IndexAny(glob, "*?[{\\\\"); i >= 0 {
		return glob[:i]
	}
	return glob + "/"
}

// reserveAction is the locks.reserve action.
func reserveAction(ctx context.Context, w *Worker, cmd *interpreter.StepCommand) (any, error) {
	var cfg lockConfig
	if err := decodeConfig(cmd.Activity.Config, &cfg); err != nil {
		return nil, err
	}
	resources := cfg.resources()
	if len(resources) == 0 {
		return nil, interpreter.Fail(events.KindValidation, false, "locks.reserve: config names no tasks and no paths")
	}
	if err := assets.CheckDuration(int64(cfg.TTLSeconds), assets.MaxDurationSeconds); err != nil {
		return nil, interpreter.Fail(events.KindValidation, false, "locks.reserve: config.ttl_seconds: %v", err)
	}
	if _, err := w.locks.reserve(ctx, cmd.RunID, cmd.StepKey, resources, time.Duration(cfg.TTLSeconds)*time.Second); err != nil {
		return nil, err
	}
	return map[string]any{"reserved": toAny(resources), "owner": cmd.RunID}, nil
}

// releaseAction is the locks.release action.
func releaseAction(ctx context.Context, w *Worker, cmd *interpreter.StepCommand) (any, error) {
	var cfg lockConfig
	if err := decodeConfig(cmd.Activity.Config, &cfg); err != nil {
		return nil, err
	}
	released, err := w.locks.release(ctx, cmd.RunID, cfg.resources())
	if err != nil {
		return nil, err
	}
	return map[string]any{"released": toAny(released)}, nil
}

func decodeConfig(cfg map[string]any, v any) error {
	raw, err := json.Marshal(cfg)
	if err != nil {
		return err
	}
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return interpreter.Fail(events.KindValidation, false, "config: %v", err)
	}
	return nil
}

func toAny(list []string) []any {
	out := make([]any, len(list))
	for i, s := range list {
		out[i] = s
	}
	return out
}

// Conflict is a resource a reservation wanted (Want) that another live
// run holds: Held, which overlaps it, owned by run Owner since Acquired.
type Conflict struct {
	Want     string
	Held     string
	Owner    string
	Step     string
	Acquired time.Time
}

// Held is one live reservation.
type Held struct {
	Resource string
	Owner    string
	Step     string
	Acquired time.Time
	Expires  time.Time // zero: until the owner run ends
}

// Locks is the engine's resource reservations (orbit_locks), for actions
// above the executor that reserve on behalf of their run: shipping's
// gates. Resources are TaskResource and FilesResource names; two runs
// never hold overlapping ones. A run's reservations are released when it
// finishes, whatever its end; one past its TTL is stale.
type Locks struct{ l *locks }

// NewLocks returns the reservations of log's orbit_locks bucket.
func NewLocks(log *events.Log) *Locks { return &Locks{l: newLocks(log)} }

// TaskResource names a task as a resource; FilesResource a file glob,
// relative to the repository.
func TaskResource(id string) string    { return "task:" + id }
func FilesResource(glob string) string { return "files:" + glob }

// Reserve takes every resource for run owner, or none: when another live
// run holds an overlapping resource it takes nothing and returns the
// conflicts. Reserving what owner holds renews it; a ttl of 0 holds until
// owner ends.
func (l *Locks) Reserve(ctx context.Context, owner, step string, resources []string, ttl time.Duration) ([]Conflict, error) {
	return l.l.reserveAll(ctx, owner, step, resources, ttl)
}

// Release gives back owner's resources (all of them when resources is
// empty) and returns those it held.
func (l *Locks) Release(ctx context.Context, owner string, resources []string) ([]string, error) {
	return l.l.release(ctx, owner, resources)
}

// Live returns the live reservations, sorted by resource.
func (l *Locks) Live(ctx context.Context) ([]Held, error) {
	cur, err := l.l.kv.Get(ctx, reservationsKey)
	if errors.Is(err, events.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	held := map[string]reservation{}
	if err := json.Unmarshal(cur.Value, &held); err != nil {
		return nil, fmt.Errorf("orbit_locks %s: %w", reservationsKey, err)
	}
	live := liveness{l: l.l, now: time.Now().UTC(), done: map[string]bool{}}
	var out []Held
	for _, res := range sortedResources(held) {
		h := held[res]
		alive, err := live.holds(ctx, h)
		if err != nil {
			return nil, err
		}
		if alive {
			out = append(out, Held{Resource: res, Owner: h.Owner, Step: h.Step, Acquired: h.Acquired, Expires: h.Expires})
		}
	}
	return out, nil
}

// Overlaps reports whether two resources cannot be held by two runs at
// once (see overlaps).
func Overlaps(a, b string) bool { return overlaps(a, b) }
