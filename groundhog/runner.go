// Package groundhog runs a task's checkpoint plan one checkpoint at a time.
// Every attempt starts from a clean git snapshot on a scratch branch with a
// fresh agent session that knows only the plan, the memory of completed
// checkpoints and the last failure of the current one. Success is decided
// by the runtime's verifier and lands as one squash commit; failure rewinds
// the workspace and retries until the checkpoint's budget is spent.
//
// Everything the runner does is an event of the task, and its own state is
// a fold of those events: after a crash it finds the attempt it left open,
// rewinds it (or completes the commit a verified attempt was making), and
// carries on.
package groundhog

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/orbitrun/orbit/agent"
	"github.com/orbitrun/orbit/assets"
	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/gitops"
	"github.com/orbitrun/orbit/internal/sandbox"
)

// Config is one Groundhog run: the task, the activity that runs it, and
// what the runner needs from the engine.
type Config struct {
	Log      *events.Log
	TaskID   string
	RunID    string
	StepKey  string
	Job      string
	Activity string              // the activity's name, for the record
	Spec     assets.ActivitySpec // a groundhog activity
	// NewProvider returns the attempt's model provider; start is where a
	// replay fixture resumes (see state.replayPosition), and fixture reports
	// the fixture a replay provider reads (empty otherwise).
	NewProvider func(ctx context.Context, start func(fixture string) int) (agent.Provider, error)
	// Memory returns the task's GroundhogMemory view reflecting at least
	// every event up to minSeq.
	Memory func(ctx context.Context, taskID string, minSeq uint64) (*Memory, error)
	// Profile and Env bound the agent's tools (the workspace is the task's).
	Profile agent.FSProfile
	Env     []string
	// GitEnv is extra environment for git (tests isolate it from the
	// machine's configuration).
	GitEnv []string
	// ReserveWorkspace takes the repository (by its absolute path) for
	// the run, or returns who holds it; nil reserves nothing. A run keeps
	// its workspace until it ends: a run resumed after its engine stopped
	// holds it again at once.
	ReserveWorkspace func(ctx context.Context, path string) (heldBy string, err error)
	// ReleaseWorkspace gives the workspace back when the run ends.
	ReleaseWorkspace func(ctx context.Context, path string) error
	// CLI runs attempts as CLI agent sessions; it is needed when the
	// activity's backend is cli, and NewProvider is then not called.
	CLI    *CLIBackend
	Logger *slog.Logger
}

// CLIBackend is what an attempt on a CLI agent needs from the engine: the
// registry its attempt token is issued from, and how to tell the agent to
// start `orbit mcp` with it.
type CLIBackend struct {
	Attempts *Attempts
	// WriteMCPConfig writes, at path, the --mcp-config that starts the
	// engine's `orbit mcp` for the attempt that holds token (Claude Code).
	WriteMCPConfig func(path, taskID, token string) error
	// CodexOverrides returns the -c arguments that start the engine's
	// `orbit mcp` in Codex for the attempt that holds token, and the
	// variables Codex must be started with, which it forwards to the
	// server: the token is never on Codex's command line.
	CodexOverrides func(taskID, token string) (args, env []string, err error)
	// Sandbox is what the attempt's agent does not see (agent.CLIConfig
	// Sandbox), and the verifier's command criteria, which run the code
	// an agent of either backend wrote; nil: they see what the engine's
	// user can.
	Sandbox *sandbox.Policy
}

// Result is how a run left the task.
type Result struct {
	State     string `json:"state"` // events.GroundhogDone, …Blocked, …Drifted, …Cancelled
	Committed int    `json:"committed"`
	Message   string `json:"message"`
}

// runner is one Run.
type runner struct {
	cfg  Config
	st   *state
	repo *gitops.Repo
	plan *assets.Plan
	pin  int // the plan version this run pinned
	log  *slog.Logger
	// by names who changes the task's status: the run, or whoever asked
	// for an approval, a rewind or an abandon.
	by string
	// mu orders record: a CLI attempt records from the agent's output
	// reader and from the session that serves its verbs at once.
	mu sync.Mutex
}

// Run executes the task's plan until every checkpoint is committed, a
// checkpoint's budget is spent (blocked), the task's budget is spent
// (budget_exhausted, checked before each attempt), the plan changes (drifted), or
// ctx ends (the open attempt is rewound first). It returns an error only
// when Orbit or git fails; the workspace is then left clean on the task
// branch, or the error says why it could not be.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	r := &runner{cfg: cfg, log: cfg.Logger, by: "run:" + cfg.RunID}
	if r.log == nil {
		r.log = slog.New(slog.DiscardHandler)
	}
	st, err := loadState(ctx, cfg.Log, cfg.TaskID)
	if err != nil {
		return nil, err
	}
	r.st = st
	if r.repo, err = gitops.Open(st.task.Workspace, gitops.WithEnv(cfg.GitEnv...)); err != nil {
		return nil, fmt.Errorf("task %s workspace: %w", cfg.TaskID, err)
	}
	if err := r.reserve(ctx); err != nil {
		return nil, err
	}
	if err := r.pinPlan(ctx); err != nil {
		if ctx.Err() == nil {
			err = errors.Join(err, r.release(ctx))
		}
		return nil, err
	}
	res, err := r.work(ctx)
	if ctx.Err() != nil {
		// Cancelled, or the engine is stopping and another resumes the run:
		// the run's own end (run.finished) is what the task's status
		// follows then (see the projector's tasks view).
		return res, err
	}
	if res == nil {
		// Orbit or git failed: the task is ready for another run, and says
		// why this one ended.
		res = &Result{State: events.GroundhogFailed, Committed: r.committedCount(), Message: err.Error()}
	}
	return res, errors.Join(err, r.finish(ctx, res), r.release(ctx))
}

// workspaceWait is how often a run waiting for its workspace asks again.
const workspaceWait = 2 * time.Second

// reserve takes the task's repository for this run, waiting while another
// run holds it: two runs in one repository would snapshot, verify and
// rewind each other's files. The first wait is recorded.
func (r *runner) reserve(ctx context.Context) error {
	if r.cfg.ReserveWorkspace == nil {
		return nil
	}
	recorded := false
	for {
		holder, err := r.cfg.ReserveWorkspace(ctx, r.repo.Dir)
		if err != nil || holder == "" {
			return err
		}
		if !recorded {
			recorded = true
			r.log.Info("waiting for the workspace", "task", r.cfg.TaskID, "workspace", r.repo.Dir, "held_by", holder)
			if err := record(ctx, r, events.GroundhogRunWaiting, events.DecisionID(events.GroundhogRunWaiting, r.cfg.TaskID, r.cfg.RunID, r.cfg.StepKey),
				events.GroundhogRunWaitingData{RunID: r.cfg.RunID, Workspace: r.repo.Dir, HeldBy: holder}); err != nil {
				return err
			}
		}
		select {
		case <-time.After(workspaceWait):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// release gives the workspace back once the run has ended.
func (r *runner) release(ctx context.Context) error {
	if r.cfg.ReleaseWorkspace == nil {
		return nil
	}
	return r.cfg.ReleaseWorkspace(context.WithoutCancel(ctx), r.repo.Dir)
}

// work recovers what an earlier run left and works through the plan.
func (r *runner) work(ctx context.Context) (*Result, error) {
	if err := r.recordInterruptions(ctx); err != nil {
		return nil, err
	}
	if err := r.recoverOpen(ctx); err != nil {
		return nil, err
	}
	if err := r.leaveHold(ctx); err != nil {
		return nil, err
	}
	if err := r.recoverStale(ctx); err != nil {
		return nil, err
	}
	if err := r.leaveHold(ctx); err != nil { // a stale snapshot of the hold branch
		return nil, err
	}
	if err := r.groundCommits(ctx); err != nil {
		return nil, err
	}
	if err := r.recordApproval(ctx); err != nil {
		return nil, err
	}
	if err := r.refuseHeldUnderDirect(ctx); err != nil {
		return nil, err
	}
	return r.loop(ctx)
}

// pinPlan records the run's start and the plan version it works on, or
// reads them back when the run is resumed.
func (r *runner) pinPlan(ctx context.Context) error {
	if started, ok := r.st.runs[r.cfg.RunID+"|"+r.cfg.StepKey]; ok {
		r.pin = started.PlanVersion
	} else {
		r.pin = r.st.planVersion
	}
	plan, err := assets.ParsePlan(fmt.Sprintf("%s plan v%d", r.cfg.TaskID, r.pin), []byte(r.st.plans[r.pin]))
	if err != nil {
		return err
	}
	r.plan = plan
	if _, ok := r.st.runs[r.cfg.RunID+"|"+r.cfg.StepKey]; ok {
		return nil
	}
	data := events.GroundhogRunStartedData{RunID: r.cfg.RunID, StepKey: r.cfg.StepKey, Activity: r.cfg.Activity, PlanVersion: r.pin}
	for i := range plan.Checkpoints {
		data.Checkpoints = append(data.Checkpoints, plan.Checkpoints[i].ID)
		data.Budgets = append(data.Budgets, plan.Checkpoints[i].Budget(r.cfg.Spec.AttemptBudgetDefault))
	}
	if err := record(ctx, r, events.GroundhogRunStarted, events.DecisionID(events.GroundhogRunStarted, r.cfg.TaskID, r.cfg.RunID, r.cfg.StepKey), data); err != nil {
		return err
	}
	if !r.ownsStatus() {
		return nil
	}
	return r.setStatus(ctx, events.TaskInProgress, "")
}

// ownsStatus reports whether the run decides the task's status: a run of
// the task's own Groundhog job does (orbit groundhog run); a Groundhog step
// of another job (a shipping pipeline) leaves the status to that job,
// which took the task in progress and moves it on when the work has
// landed.
func (r *runner) ownsStatus() bool {
	return r.cfg.Job == events.GroundhogJobPrefix+r.cfg.TaskID
}

// loop works through the checkpoints in order.
func (r *runner) loop(ctx context.Context) (*Result, error) {
	for i := range r.plan.Checkpoints {
		cp := &r.plan.Checkpoints[i]
		if r.st.committed(cp.ID) != nil {
			continue
		}
		for {
			budget := cp.Budget(r.cfg.Spec.AttemptBudgetDefault)
			n, spent := r.st.attemptsOf(cp.ID, r.pin)
			if r.st.abandoned[abandonKey(r.pin, cp.ID)] || spent >= budget {
				if err := r.abandon(ctx, cp, spent, budget); err != nil {
					return nil, err
				}
				return &Result{State: events.GroundhogBlocked, Committed: r.committedCount(),
					Message: fmt.Sprintf("checkpoint %s: %d of %d attempts spent", cp.ID, spent, budget)}, nil
			}
			if drifted, current, err := r.drifted(ctx); err != nil {
				return nil, err
			} else if drifted {
				return &Result{State: events.GroundhogDrifted, Committed: r.committedCount(),
					Message: fmt.Sprintf("the plan changed from version %d to %d", r.pin, current)}, nil
			}
			if res, err := r.budgetSpent(ctx, cp); res != nil || err != nil {
				return res, err
			}
			if res, err := r.heldOnBaseline(ctx, cp); res != nil || err != nil {
				return res, err
			}
			done, err := r.attempt(ctx, cp, n+1)
			if errors.Is(err, errBaselineRed) {
				if err := r.leaveHold(ctx); err != nil {
					return nil, err
				}
				if res, err := r.heldOnBaseline(ctx, cp); res != nil || err != nil {
					return res, err
				}
				return &Result{State: events.GroundhogBaselineRed, Committed: r.committedCount(),
					Message: fmt.Sprintf("checkpoint %s holds: its base fails its checks too", cp.ID)}, nil
			}
			err = errors.Join(err, r.leaveHold(ctx))
			if err != nil {
				if ctx.Err() != nil {
					return &Result{State: events.GroundhogCancelled, Committed: r.committedCount(), Message: context.Cause(ctx).Error()}, ctx.Err()
				}
				return nil, err
			}
			if done {
				break
			}
		}
	}
	return &Result{State: events.GroundhogDone, Committed: r.committedCount(), Message: "every checkpoint committed"}, nil
}

func (r *runner) committedCount() int {
	n := 0
	for i := range r.plan.Checkpoints {
		if r.st.committed(r.plan.Checkpoints[i].ID) != nil {
			n++
		}
	}
	return n
}

// drifted is the grounding check before an attempt: the task's plan
// version must still be the pinned one. On a change it records
// groundhog.drift_detected; the workspace is clean at this point.
func (r *runner) drifted(ctx context.Context) (bool, int, error) {
	if err := r.refresh(ctx); err != nil {
		return false, 0, err
	}
	if r.st.planVersion == r.pin {
		return false, r.pin, nil
	}
	err := record(ctx, r, events.GroundhogDrift, events.DecisionID(events.GroundhogDrift, r.cfg.TaskID, r.cfg.RunID, strconv.Itoa(r.st.planVersion)),
		events.GroundhogDriftData{RunID: r.cfg.RunID, PinnedVersion: r.pin, CurrentVersion: r.st.planVersion})
	return true, r.st.planVersion, err
}

// refresh folds the task's events again (a plan edit comes from outside).
func (r *runner) refresh(ctx context.Context) error {
	st, err := loadState(ctx, r.cfg.Log, r.cfg.TaskID)
	if err != nil {
		return err
	}
	r.st = st
	return nil
}

func (r *runner) abandon(ctx context.Context, cp *assets.Checkpoint, attempts, budget int) error {
	if !r.st.abandoned[abandonKey(r.pin, cp.ID)] {
		if err := record(ctx, r, events.GroundhogAbandoned, events.DecisionID(events.GroundhogAbandoned, r.cfg.TaskID, strconv.Itoa(r.pin), cp.ID),
			events.GroundhogAbandonedData{Checkpoint: cp.ID, Attempts: attempts, Budget: budget}); err != nil {
			return err
		}
	}
	return nil
}

// finish records the run's end and the task's new status.
func (r *runner) finish(ctx context.Context, res *Result) error {
	ctx = context.WithoutCancel(ctx)
	if err := record(ctx, r, events.GroundhogRunFinished, events.DecisionID(events.GroundhogRunFinished, r.cfg.TaskID, r.cfg.RunID, r.cfg.StepKey),
		events.GroundhogRunFinishedData{RunID: r.cfg.RunID, State: res.State, Committed: res.Committed, Message: res.Message}); err != nil {
		return err
	}
	if !r.ownsStatus() {
		return nil
	}
	status, reason := events.TaskBacklog, res.Message
	switch res.State {
	case events.GroundhogDone:
		status = events.TaskDone
		if ref, held, err := r.unapproved(ctx); err != nil {
			return err
		} else if held {
			status = events.TaskHeld
			reason = fmt.Sprintf("every checkpoint is committed, held for approval on %s; orbit groundhog approve %s lands them on %s",
				ref, r.cfg.TaskID, r.st.task.Branch)
		}
	case events.GroundhogBlocked, events.GroundhogBaselineRed:
		status = events.TaskBlocked
	case events.GroundhogBudgetExhausted:
		status = events.TaskBudgetExhausted
	case events.GroundhogFailed, events.GroundhogCancelled, events.GroundhogDrifted:
		reason = "run " + r.cfg.RunID + " " + res.State + ": " + res.Message
	}
	return r.setStatus(ctx, status, reason)
}

func (r *runner) setStatus(ctx context.Context, status, reason string) error {
	return record(ctx, r, events.TaskStatusChanged, "", events.TaskStatusChangedData{Status: status, Reason: reason, RunID: r.cfg.RunID,
		From: r.st.status, By: r.by})
}

// record appends an event of the task and folds its payload into the
// runner's state as it is, not re-read from the log (unless the log already
// held the event: a duplicate is already folded, or is another writer's).
// The state gets a pointer to its own copy of payload, the form
// events.Event.Payload returns.
func record[T any](ctx context.Context, r *runner, typ, id string, payload T) error {
	ev := events.Event{ID: id, Type: typ, TaskID: r.cfg.TaskID, RunID: r.cfg.RunID, StepKey: r.cfg.StepKey, Job: r.cfg.Job}
	r.mu.Lock()
	defer r.mu.Unlock()
	a, err := r.cfg.Log.Append(ctx, ev, payload)
	if err != nil || a.Duplicate {
		return err
	}
	r.st.fold(a.Seq, &payload)
	return nil
}

// groundCommits records the grounding record of every commit that lacks
// one (a crash between the two).
func (r *runner) groundCommits(ctx context.Context) error {
	for _, a := range r.st.attempts {
		if a.committed != nil && !a.forgotten && !r.st.grounded[a.started.Day] {
			if err := r.ground(ctx, a.committed); err != nil {
				return err
			}
		}
	}
	return nil
}

// ground records the post-commit grounding record: the commit and a hash
// chained from the previous record.
func (r *runner) ground(ctx context.Context, c *events.GroundhogCommittedData) error {
	hash := StateHash(r.st.lastHash, r.cfg.TaskID, c)
	return record(ctx, r, events.GroundhogGrounding, events.DecisionID(events.GroundhogGrounding, r.cfg.TaskID, strconv.Itoa(c.Day)),
		events.GroundhogGroundingData{Attempt: c.Attempt, SHA: c.SHA, PrevHash: r.st.lastHash, StateHash: hash})
}

// StateHash chains a commit onto the previous grounding hash: sha256 of the
// previous hash, the task, the checkpoint, the day, the commit and its
// summary, one per line.
func StateHash(prev, task string, c *events.GroundhogCommittedData) string {
	sum := sha256.Sum256([]byte(prev + "\n" + task + "\n" + c.Checkpoint + "\n" + strconv.Itoa(c.Day) + "\n" + c.SHA + "\n" + c.Summary))
	return "sha256-" + hex.EncodeToString(sum[:])
}
