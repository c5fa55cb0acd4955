package routine

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/orbitrun/orbit/assets"
	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/executor"
	"github.com/orbitrun/orbit/internal/failpoint"
)

// A routine's ticks are decided in key routine.<name> of orbit_leases by
// compare-and-set (see docs/architecture/routines.md, "One decision per
// tick"): the key holds the last tick decided and what was decided, so
// exactly one engine decides each tick, and whatever it decided is
// carried out by it or, if it died first, by the next engine that reads
// the key (Acted is false until then).

// stateKey is the key of a routine's state in orbit_leases.
func stateKey(name string) string { return "routine." + name }

// State is what the cluster knows of a routine's schedule.
type State struct {
	// Last is the last tick decided (when the routine was first seen, the
	// moment it was: no tick before it fires).
	Last time.Time `json:"last"`
	// Action is what was decided for Last: fired, skipped, or empty for
	// the first sight.
	Action string `json:"action,omitempty"`
	// Run is the run Last fired (or would have fired, when skipped).
	Run string `json:"run,omitempty"`
	// Missed is how many ticks before Last no engine fired, when Last was
	// a catch-up run or a skip of missed ticks.
	Missed int `json:"missed,omitempty"`
	// Reason is why Last was skipped (events.SkipOverlap, SkipMissed…),
	// Running the run that still ran, Error why its request was refused
	// (events.SkipRefused).
	Reason  string `json:"reason,omitempty"`
	Running string `json:"running,omitempty"`
	Error   string `json:"error,omitempty"`
	// Acted is set once the decision for Last is in the log.
	Acted bool `json:"acted"`
	// LastRun is the last run fired, LastFire its tick, Sent when its
	// request went into the log (the decision carried out: later than the
	// tick when the engine that decided it died first).
	LastRun  string    `json:"last_run,omitempty"`
	LastFire time.Time `json:"last_fire,omitzero"`
	Sent     time.Time `json:"sent,omitzero"`
	// Fired and Skipped count the ticks decided each way.
	Fired   int `json:"fired,omitempty"`
	Skipped int `json:"skipped,omitempty"`
	// Paused: no tick is decided until the routine is resumed; then the
	// ticks that passed are missed ticks.
	Paused bool `json:"paused,omitempty"`
	// Retries is how many times LastFire's tick was run again after its
	// run failed (policy.retries); RetryAt, when set, is when the next
	// retry is due: decided once the failure is seen, so every engine
	// waits the same backoff.
	Retries int       `json:"retries,omitempty"`
	RetryAt time.Time `json:"retry_at,omitzero"`
}

// Actions recorded in State.Action.
const (
	ActionFired   = "fired"
	ActionSkipped = "skipped"
	ActionRetried = "retried"
)

// TickRunID is the run id of a routine's tick: a ULID whose time is the
// tick's and whose entropy derives from the routine and the tick, so every
// engine names the same run for it.
func TickRunID(name string, tick time.Time) string {
	sum := sha256.Sum256(binary.BigEndian.AppendUint64([]byte(name+"\x00"), uint64(tick.UnixNano())))
	var id ulid.ULID
	if err := id.SetTime(ulid.Timestamp(tick)); err != nil {
		return events.DecisionID("routine", name, tick.UTC().Format(time.RFC3339Nano))
	}
	copy(id[6:], sum[:10])
	return id.String()
}

// RetryRunID is the run id of retry attempt (1, 2…) of a routine's tick,
// derived as TickRunID's is, so every engine names the same retry.
func RetryRunID(name string, tick time.Time, attempt int) string {
	return TickRunID(fmt.Sprintf("%s\x00retry %d", name, attempt), tick)
}

// Config is what a Scheduler needs.
type Config struct {
	Log *events.Log
	// Root is the project's root: routines are read from Root/.orbit/routines.
	Root string
	// Request builds the run request of a job of the engine's catalog
	// (the job validated, its input merged, the backend resolved).
	Request func(job string, input any) (*executor.RunRequest, error)
	Logger  *slog.Logger
	// Now is the clock (time.Now when nil).
	Now func() time.Time
	// Poll is how often the routine files are read again (1s when 0).
	Poll time.Duration
}

// Scheduler fires the routines of one engine's project. Every engine runs
// one; the key of each routine makes them agree.
type Scheduler struct {
	cfg      Config
	problems string
}

// NewScheduler returns a scheduler for cfg.
func NewScheduler(cfg Config) *Scheduler {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Poll == 0 {
		cfg.Poll = time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &Scheduler{cfg: cfg}
}

// Run decides and fires ticks until ctx ends.
func (s *Scheduler) Run(ctx context.Context) error {
	for {
		routines, err := Load(s.cfg.Root)
		s.report(err)
		wake := s.cfg.Now().Add(s.cfg.Poll)
		for _, r := range routines {
			next, err := s.Tick(ctx, r)
			if err != nil {
				if ctx.Err() != nil {
					return nil
				}
				s.cfg.Logger.Warn("routine tick", "routine", r.Name, "err", err)
				continue
			}
			if !next.IsZero() && next.Before(wake) {
				wake = next
			}
		}
		timer := time.NewTimer(max(time.Until(wake), 10*time.Millisecond))
		select {
		case <-ctx.Done():
			timer.Stop()
			return nil
		case <-timer.C:
		}
	}
}

// report logs the routine files' problems when they change.
func (s *Scheduler) report(err error) {
	text := ""
	if err != nil {
		text = err.Error()
	}
	if text != s.problems && text != "" {
		s.cfg.Logger.Warn("routine files left out", "problems", text)
	}
	s.problems = text
}

// ReadState returns a routine's state and the key's revision (0 and a zero
// State when it was never seen).
func ReadState(ctx context.Context, log *events.Log, name string) (State, uint64, error) {
	e, err := log.Leases().Get(ctx, stateKey(name))
	if errors.Is(err, events.ErrNotFound) {
		return State{}, 0, nil
	}
	if err != nil {
		return State{}, 0, err
	}
	var st State
	if err := json.Unmarshal(e.Value, &st); err != nil {
		return State{}, 0, fmt.Errorf("routine %s: state: %w", name, err)
	}
	return st, e.Revision, nil
}

// writeState writes st if the key is still at rev (created when rev is
// 0); events.ErrConflict when another engine wrote it first.
func writeState(ctx context.Context, log *events.Log, name string, st State, rev uint64) (uint64, error) {
	data, err := json.Marshal(st)
	if err != nil {
		return 0, err
	}
	if rev == 0 {
		return log.Leases().Create(ctx, stateKey(name), data)
	}
	return log.Leases().Update(ctx, stateKey(name), data, rev)
}

// maxLate is how long after its tick a tick still fires as on time; later
// (or with a later tick also due) it is a missed tick.
const maxLate = time.Minute

// maxTicks bounds the ticks counted between two decisions.
const maxTicks = 100000

// Tick decides every tick of r that is due and carries the decision out,
// and returns when r's next tick is.
func (s *Scheduler) Tick(ctx context.Context, r *Routine) (time.Time, error) {
	for range 8 {
		now := s.cfg.Now().UTC()
		st, rev, err := ReadState(ctx, s.cfg.Log, r.Name)
		if err != nil {
			return time.Time{}, err
		}
		if rev == 0 {
			_, err := writeState(ctx, s.cfg.Log, r.Name, State{Last: now, Acted: true}, 0)
			if err != nil && !errors.Is(err, events.ErrConflict) {
				return time.Time{}, err
			}
			continue
		}
		if !st.Acted {
			if st, err = s.act(ctx, r, st); err != nil {
				return time.Time{}, err
			}
			st.Acted = true
			if st.Action == ActionFired || st.Action == ActionRetried {
				st.Sent = s.cfg.Now().UTC()
			}
			if _, err := writeState(ctx, s.cfg.Log, r.Name, st, rev); err != nil && !errors.Is(err, events.ErrConflict) {
				return time.Time{}, err
			}
			continue
		}
		if err := s.timeOut(ctx, r, st, now); err != nil {
			return time.Time{}, err
		}
		if st.Paused {
			return time.Time{}, nil
		}
		due, n := dueTicks(r.schedule, st.Last, now)
		var next State
		if n == 0 {
			var wake time.Time
			next, wake, err = s.retry(ctx, r, st, now)
			if err != nil || !wake.IsZero() {
				return wake, err
			}
		} else {
			var wait bool
			if next, wait, err = s.decide(ctx, r, st, due, n, now); err != nil {
				return time.Time{}, err
			}
			if wait {
				return now.Add(s.cfg.Poll), nil
			}
		}
		if _, err := writeState(ctx, s.cfg.Log, r.Name, next, rev); err != nil {
			if errors.Is(err, events.ErrConflict) {
				continue // another engine decided it
			}
			return time.Time{}, err
		}
		// Decided, not carried out: the next read of the key does that,
		// here or on the engine that reads it next.
		failpoint.Hit("routine-after-decision")
	}
	return s.cfg.Now().Add(s.cfg.Poll), nil
}

// timeOut asks the routine's last run to cancel once timeout_minutes have
// passed since its tick, not counting the time the run was paused (orbit
// run pause), and it is still live. The cancel's id derives from the
// run, so engines that ask together record one.
func (s *Scheduler) timeOut(ctx context.Context, r *Routine, st State, now time.Time) error {
	limit := time.Duration(r.TimeoutMinutes) * time.Minute
	if limit == 0 || st.LastRun == "" || now.Sub(st.LastFire) < limit {
		return nil
	}
	deadline, ok, err := executor.PausedDeadline(ctx, s.cfg.Log, st.LastRun, st.LastFire.Add(limit), st.LastFire)
	if err != nil || !ok || now.Before(deadline) {
		return err
	}
	live, err := Live(ctx, s.cfg.Log, st.LastRun)
	if err != nil || !live {
		return err
	}
	return executor.RequestCancelOf(ctx, s.cfg.Log, st.LastRun, events.RunCancelRequestedData{
		Requester: "routine:" + r.Name,
		Reason:    fmt.Sprintf("the routine's timeout_minutes (%d) passed", r.TimeoutMinutes),
	})
}

// dueTicks returns the last tick of sched after last and not after now, and
// how many there are.
func dueTicks(sched *Schedule, last, now time.Time) (time.Time, int) {
	var due time.Time
	n := 0
	for t, ok := sched.Next(last); ok && !t.After(now) && n < maxTicks; t, ok = sched.Next(t) {
		due, n = t, n+1
	}
	return due, n
}

// decide is the decision for tick due, the last of n due ticks: fire it,
// skip it as missed, or skip it as an overlap; or wait, when the run that
// overlaps was sent after the first of the due ticks. That run's decision
// was carried out late (its engine died in between), so it did not run at
// those ticks: they are missed ticks, not overlaps, decided by the
// missed_run policy once it has finished.
func (s *Scheduler) decide(ctx context.Context, r *Routine, st State, due time.Time, n int, now time.Time) (State, bool, error) {
	next := st
	next.Last, next.Acted, next.Run = due, false, TickRunID(r.Name, due)
	next.Reason, next.Running, next.Error, next.Missed = "", "", "", 0
	late := n > 1 || now.Sub(due) >= maxLate
	if late {
		next.Missed = n - 1
	}
	if late && r.MissedRun == Skip {
		next.Action, next.Reason, next.Missed = ActionSkipped, events.SkipMissed, n
		next.Skipped++
		return next, false, nil
	}
	if r.Overlap == Forbid && st.LastRun != "" {
		live, err := Live(ctx, s.cfg.Log, st.LastRun)
		if err != nil {
			return State{}, false, err
		}
		if first, _ := r.schedule.Next(st.Last); live && st.Sent.After(first) {
			return State{}, true, nil
		}
		if live {
			next.Action, next.Reason, next.Running = ActionSkipped, events.SkipOverlap, st.LastRun
			next.Skipped++
			return next, false, nil
		}
	}
	next.Action = ActionFired
	next.Fired++
	return next, false, nil
}

// retry is the decision on the last tick's run when no tick is due: once
// the run has failed and retries are left, first the moment of the next
// retry (the backoff from when the failure was seen), then, from that
// moment, the retry's run, decided and carried out as a tick is. It
// returns when to look again instead when there is nothing to decide now.
func (s *Scheduler) retry(ctx context.Context, r *Routine, st State, now time.Time) (State, time.Time, error) {
	wake, _ := r.schedule.Next(st.Last)
	if st.LastRun == "" || st.Retries >= r.Retries {
		return State{}, wake, nil
	}
	if !st.RetryAt.IsZero() {
		if now.Before(st.RetryAt) {
			return State{}, earliest(wake, st.RetryAt), nil
		}
		next := st
		next.Retries++
		next.Action, next.Acted, next.RetryAt = ActionRetried, false, time.Time{}
		next.Run = RetryRunID(r.Name, st.LastFire, next.Retries)
		next.LastRun = next.Run
		next.Reason, next.Running, next.Error, next.Missed = "", "", "", 0
		return next, time.Time{}, nil
	}
	failed, err := Failed(ctx, s.cfg.Log, st.LastRun)
	if err != nil || !failed {
		return State{}, earliest(wake, now.Add(s.cfg.Poll)), err
	}
	next := st
	next.RetryAt = now.Add(time.Duration(r.BackoffMinutes) * time.Minute)
	return next, time.Time{}, nil
}

// earliest is the earlier of a and b, ignoring a zero a.
func earliest(a, b time.Time) time.Time {
	if a.IsZero() || b.Before(a) {
		return b
	}
	return a
}

// Failed reports whether run id has finished failed.
func Failed(ctx context.Context, log *events.Log, id string) (bool, error) {
	evs, err := log.Read(ctx, events.FollowOptions{Filters: []string{events.EventSubject(events.AggregateRun, id, events.RunFinished)}})
	if err != nil || len(evs) == 0 {
		return false, err
	}
	var d events.RunFinishedData
	if err := evs[len(evs)-1].Decode(&d); err != nil {
		return false, fmt.Errorf("run %s: %s: %w", id, events.RunFinished, err)
	}
	return d.State == events.StateFailed, nil
}

// Live reports whether run id was requested and has not finished.
func Live(ctx context.Context, log *events.Log, id string) (bool, error) {
	finished, err := log.LastMatching(ctx, []string{events.EventSubject(events.AggregateRun, id, events.RunFinished)})
	return finished == 0, err
}

// act records the decision st holds for its tick: the run's request, or
// the skipped tick. Both are idempotent (the run's id and the record's id
// derive from the routine and the tick), so a decision carried out twice,
// by an engine that died before it said so and by the next, counts once.
// It returns the state to record. A fired tick's run becomes the last run
// (LastRun, LastFire) only here, once its request is in the log. A run or
// retry whose request is refused (its job gone, disabled or invalid) is
// recorded skipped, reason refused, and counted so: a refused tick leaves
// the last run, its tick and its retries as they were, as a skipped tick
// does; a refused retry ends its tick's retries, and no run of it exists,
// so it is no longer the last run (which overlap, the timeout and retries
// would wait on for ever).
func (s *Scheduler) act(ctx context.Context, r *Routine, st State) (State, error) {
	var err error
	switch st.Action {
	case ActionFired:
		err = s.fire(ctx, r, st.Run, events.RoutineTick{Name: r.Name, Tick: st.Last, Missed: st.Missed})
		if err == nil {
			st.LastRun, st.LastFire = st.Run, st.Last
			st.Retries, st.RetryAt = 0, time.Time{}
		}
		if err == nil || ctx.Err() != nil {
			return st, err
		}
		s.cfg.Logger.Warn("routine run refused", "routine", r.Name, "tick", st.Last, "err", err)
		st.Fired--
	case ActionRetried:
		err = s.fire(ctx, r, st.Run, events.RoutineTick{Name: r.Name, Tick: st.LastFire, Retry: st.Retries})
		if err == nil || ctx.Err() != nil {
			return st, err
		}
		s.cfg.Logger.Warn("routine retry refused", "routine", r.Name, "tick", st.LastFire, "retry", st.Retries, "err", err)
	case ActionSkipped:
		return st, s.skip(ctx, r, st, st.Reason, "")
	default:
		return st, nil
	}
	if serr := s.skip(ctx, r, st, events.SkipRefused, err.Error()); serr != nil {
		return st, serr
	}
	if st.Action == ActionRetried {
		st.LastRun = ""
	}
	st.Action, st.Reason, st.Error = ActionSkipped, events.SkipRefused, err.Error()
	st.Skipped++
	return st, nil
}

func (s *Scheduler) fire(ctx context.Context, r *Routine, runID string, tick events.RoutineTick) error {
	req, err := s.cfg.Request(r.Job, r.Input)
	if err != nil {
		return err
	}
	req.RunID = runID
	req.Requester = "routine:" + r.Name
	req.Routine = &tick
	if err := executor.CheckStorable(ctx, s.cfg.Log, req); err != nil {
		return err
	}
	return executor.Submit(ctx, s.cfg.Log, req)
}

func (s *Scheduler) skip(ctx context.Context, r *Routine, st State, reason, detail string) error {
	d := events.RoutineSkippedData{Routine: r.Name, Tick: st.Last, Reason: reason, Running: st.Running, Ticks: max(st.Missed, 1), Error: detail}
	if st.Action == ActionRetried {
		d.Tick, d.Retry = st.LastFire, st.Retries
	}
	_, err := s.cfg.Log.Append(ctx, events.Event{
		ID:    events.DecisionID(events.RoutineSkipped, st.Run),
		Type:  events.RoutineSkipped,
		RunID: st.Run,
		Job:   r.Job,
	}, d)
	return err
}

// SetPaused pauses or resumes a routine (orbit routine pause|resume): a
// paused routine decides no tick; once resumed, the ticks that passed are
// missed ticks, for its missed_run policy. It reports whether the state
// changed.
func SetPaused(ctx context.Context, log *events.Log, name string, paused bool, now time.Time) (bool, error) {
	for range 8 {
		st, rev, err := ReadState(ctx, log, name)
		if err != nil {
			return false, err
		}
		if rev == 0 {
			st = State{Last: now.UTC(), Acted: true}
		}
		if rev != 0 && st.Paused == paused {
			return false, nil
		}
		st.Paused = paused
		_, err = writeState(ctx, log, name, st, rev)
		if errors.Is(err, events.ErrConflict) {
			continue
		}
		return err == nil, err
	}
	return false, fmt.Errorf("routine %s: %w: the state kept changing", name, events.ErrConflict)
}

// RunNow fires r once, outside its schedule (orbit routine run-now): a run
// with a new id whose request names the routine, Manual set.
func RunNow(ctx context.Context, cfg Config, r *Routine) (string, error) {
	s := NewScheduler(cfg)
	id := events.NewID()
	if err := s.fire(ctx, r, id, events.RoutineTick{Name: r.Name, Tick: s.cfg.Now().UTC(), Manual: true}); err != nil {
		return "", err
	}
	return id, nil
}

// Status is a routine as orbit routine list and show, the console and
// /metrics show it.
type Status struct {
	Routine *Routine `json:"routine"`
	State   State    `json:"state"`
	// Next is the next tick (zero when the routine is paused or its
	// schedule never fires again).
	Next time.Time `json:"next,omitzero"`
}

// Statuses reads the state of each of routines.
func Statuses(ctx context.Context, log *events.Log, routines []*Routine, now time.Time) ([]Status, error) {
	out := make([]Status, 0, len(routines))
	for _, r := range routines {
		st, _, err := ReadState(ctx, log, r.Name)
		if err != nil {
			return nil, err
		}
		s := Status{Routine: r, State: st}
		if !st.Paused && r.schedule != nil {
			from := st.Last
			if from.IsZero() || from.Before(now) {
				from = now
			}
			s.Next, _ = r.schedule.Next(from)
		}
		out = append(out, s)
	}
	return out, nil
}

// Find returns the routine named name among routines, or an error matching
// events.ErrNotFound.
func Find(routines []*Routine, name string) (*Routine, error) {
	for _, r := range routines {
		if r.Name == name {
			return r, nil
		}
	}
	return nil, events.NotFoundf("no routine %s (orbit routine list lists the routines)", assets.Quote(name))
}
