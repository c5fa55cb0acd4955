package groundhog

import (
	"context"
	"fmt"

	"github.com/orbitrun/orbit/events"
)

// state is the runner's knowledge of a task: a fold of the task's events.
// It is all the runner remembers, so a restarted runner picks up exactly
// where the log says the last one was.
type state struct {
	task        *events.TaskCreatedData
	status      string // the task's status, as task.created or task.status_changed last said
	planVersion int
	plans       map[int]string // plan text by version
	lastSeq     uint64

	runs     map[string]events.GroundhogRunStartedData // by run id + "|" + step key
	attempts []*attemptState                           // in day order; days may skip (a stale scratch branch)
	// grounding is the last grounding record's hash; grounded the days
	// whose commit has one.
	lastHash string
	grounded map[int]bool
	// hashes are the grounding hashes by day, which a rewind goes back
	// along.
	hashes map[int]string
	// abandoned checkpoints, by plan version and checkpoint id.
	abandoned map[string]bool
	// approved are the commits approvals fast-forwarded the task branch
	// to, in order.
	approved []string
	// baseline are the criteria run on a base commit, by base sha + "|" +
	// criterion key (groundhog.baseline): each is run there once.
	baseline map[string]events.CriterionResult
}

// attemptState is what the log says about one attempt.
type attemptState struct {
	started      events.GroundhogAttemptData
	verb         *events.GroundhogVerbData
	verification *events.GroundhogVerificationData
	failed       *events.GroundhogAttemptFailedData
	committed    *events.GroundhogCommittedData
	rewound      *events.GroundhogRewoundData
	interrupted  bool
	turns        []events.AgentTurnData
	// usage is the account of each CLI session of the attempt.
	usage []*events.GroundhogUsageData
	// forgotten: a rewind (groundhog.rewound_to) took the task back to
	// before this attempt. It still numbers the days, and nothing else.
	forgotten bool
}

// closed reports whether the attempt has its closing record: a commit, a
// rewind, or an interruption (which follows a rewind, except when an
// abandon left the workspace as it found it).
func (a *attemptState) closed() bool { return a.committed != nil || a.rewound != nil || a.interrupted }

// newState is the fold of no events.
func newState() *state {
	return &state{plans: map[int]string{}, runs: map[string]events.GroundhogRunStartedData{}, grounded: map[int]bool{}, hashes: map[int]string{}, abandoned: map[string]bool{},
		baseline: map[string]events.CriterionResult{}}
}

// loadState reads every event of the task and folds them.
func loadState(ctx context.Context, log *events.Log, taskID string) (*state, error) {
	evs, err := log.Read(ctx, events.FollowOptions{Filters: []string{events.TaskFilter(taskID)}})
	if err != nil {
		return nil, err
	}
	st := newState()
	for _, ev := range evs {
		if _, err := st.apply(ev); err != nil {
			return nil, err
		}
	}
	if st.task == nil {
		return nil, events.NotFoundf("no task %s", taskID)
	}
	return st, nil
}

func (st *state) byDay(day int) *attemptState {
	for i := len(st.attempts) - 1; i >= 0; i-- {
		if st.attempts[i].started.Day == day {
			return st.attempts[i]
		}
	}
	return nil
}

// lastDay is the day of the latest attempt, 0 before the first.
func (st *state) lastDay() int {
	if n := len(st.attempts); n > 0 {
		return st.attempts[n-1].started.Day
	}
	return 0
}

// apply decodes an event read from the log, folds it, and returns its
// payload.
func (st *state) apply(ev events.Event) (any, error) {
	p, err := ev.Payload()
	if err != nil {
		return nil, err
	}
	st.fold(ev.Seq, p)
	return p, nil
}

// fold folds the payload of the event stored at seq. payload is a pointer
// to the event's registered type, as events.Event.Payload returns it; any
// other type (a value in particular) is ignored like an event the state
// does not need.
//
// IMPORTANT: the state keeps the pointers it is given, so a payload must
// not change after it is folded.
func (st *state) fold(seq uint64, payload any) {
	st.lastSeq = seq
	switch d := payload.(type) {
	case *events.TaskCreatedData:
		st.task, st.planVersion = d, d.PlanVersion
		st.status = d.Status
		if st.status == "" {
			st.status = events.TaskActive // the first version's tasks started active
		}
		st.plans[d.PlanVersion] = d.Plan
	case *events.TaskStatusChangedData:
		st.status = d.Status
	case *events.TaskWorktreeAssignedData:
		// A shipping run gave the task a worktree: its work is there from
		// now on, on the worktree's branch. A copy, as st.task is the
		// payload of task.created.
		if st.task != nil {
			t := *st.task
			t.Workspace, t.Branch = d.Worktree, d.Branch
			st.task = &t
		}
	case *events.TaskPlanChangedData:
		st.planVersion = d.PlanVersion
		st.plans[d.PlanVersion] = d.Plan
	case *events.GroundhogRunStartedData:
		st.runs[d.RunID+"|"+d.StepKey] = *d
	case *events.GroundhogAttemptData:
		if d.Day > st.lastDay() {
			st.attempts = append(st.attempts, &attemptState{started: *d})
		}
	case *events.GroundhogTurnData:
		if a := st.byDay(d.Day); a != nil {
			a.turns = append(a.turns, d.Turn)
		}
	case *events.GroundhogUsageData:
		if a := st.byDay(d.Day); a != nil {
			a.usage = append(a.usage, d)
		}
	case *events.GroundhogVerbData:
		if a := st.byDay(d.Day); a != nil {
			a.verb = d
		}
	case *events.GroundhogVerificationData:
		if a := st.byDay(d.Day); a != nil {
			a.verification = d
		}
	case *events.GroundhogAttemptFailedData:
		if a := st.byDay(d.Day); a != nil {
			a.failed = d
		}
	case *events.GroundhogCommittedData:
		if a := st.byDay(d.Day); a != nil {
			a.committed = d
		}
	case *events.GroundhogRewoundData:
		if a := st.byDay(d.Day); a != nil {
			a.rewound = d
		}
	case *events.GroundhogInterruptedData:
		if a := st.byDay(d.Day); a != nil {
			a.interrupted = true
		}
	case *events.GroundhogAbandonedData:
		st.abandoned[abandonKey(st.attemptVersion(d.Checkpoint), d.Checkpoint)] = true
	case *events.GroundhogGroundingData:
		st.lastHash = d.StateHash
		st.grounded[d.Day] = true
		st.hashes[d.Day] = d.StateHash
	case *events.GroundhogRewoundToData:
		st.forget(d.FromDay)
	case *events.GroundhogApprovedData:
		st.approved = append(st.approved, d.ToSHA)
	case *events.GroundhogBaselineData:
		for _, c := range d.Checks {
			st.baseline[d.BaseSHA+"|"+c.Key] = c.Result
		}
	}
}

// attemptVersion is the plan version of the last attempt of a checkpoint
// (the version an abandonment applies to).
func (st *state) attemptVersion(checkpoint string) int {
	for i := len(st.attempts) - 1; i >= 0; i-- {
		if st.attempts[i].started.Checkpoint == checkpoint {
			return st.attempts[i].started.PlanVersion
		}
	}
	return st.planVersion
}

func abandonKey(version int, checkpoint string) string {
	return fmt.Sprintf("%d|%s", version, checkpoint)
}

// committed returns the commit of a checkpoint, if one of its attempts (of
// any plan version) committed.
func (st *state) committed(checkpoint string) *events.GroundhogCommittedData {
	for _, a := range st.attempts {
		if a.started.Checkpoint == checkpoint && a.committed != nil && !a.forgotten {
			return a.committed
		}
	}
	return nil
}

// attemptsOf counts the attempts of a checkpoint under a plan version:
// all of them (which numbers the next), and those that spent the budget.
// An interrupted attempt — its run stopped under it — is not the agent's
// failure and spends nothing; a step that keeps killing its engine is
// bounded by dead-lettering instead.
func (st *state) attemptsOf(checkpoint string, version int) (all, spent int) {
	for _, a := range st.attempts {
		if a.started.Checkpoint == checkpoint && a.started.PlanVersion == version && !a.forgotten {
			all++
			if !a.interrupted {
				spent++
			}
		}
	}
	return all, spent
}

// open returns the attempt that was started and never closed, if any.
func (st *state) open() *attemptState {
	if n := len(st.attempts); n > 0 && !st.attempts[n-1].closed() {
		return st.attempts[n-1]
	}
	return nil
}

// replayPosition is where a replay fixture resumes: after every turn of
// attempts that closed normally. The turns of an interrupted attempt are
// given again to the attempt that follows it, so a restarted run replays
// the same script.
func (st *state) replayPosition(fixture string) int {
	n := 0
	for _, a := range st.attempts {
		if !a.closed() || a.interrupted {
			continue
		}
		for _, t := range a.turns {
			if t.Fixture == fixture {
				n++
			}
		}
	}
	return n
}

// forget folds a rewind: the attempts from day on are forgotten, their
// checkpoints are no longer committed (nor abandoned), and the grounding
// chain goes on from the last commit that is kept.
func (st *state) forget(day int) {
	st.lastHash = ""
	for _, a := range st.attempts {
		if a.started.Day < day {
			if h, ok := st.hashes[a.started.Day]; ok && !a.forgotten {
				st.lastHash = h
			}
			continue
		}
		a.forgotten = true
		delete(st.abandoned, abandonKey(a.started.PlanVersion, a.started.Checkpoint))
	}
}

// commits are the commits the task keeps, in day order.
func (st *state) commits() []*events.GroundhogCommittedData {
	var out []*events.GroundhogCommittedData
	for _, a := range st.attempts {
		if a.committed != nil && !a.forgotten {
			out = append(out, a.committed)
		}
	}
	return out
}
