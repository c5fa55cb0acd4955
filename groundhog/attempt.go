package groundhog

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/orbitrun/orbit/agent"
	"github.com/orbitrun/orbit/assets"
	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/gitops"
	"github.com/orbitrun/orbit/internal/failpoint"
)

// cleanupTimeout bounds rewinding after ctx ended.
const cleanupTimeout = 30 * time.Second

// attempt is one attempt in progress.
type attempt struct {
	r           *runner
	id          events.Attempt
	snap        *gitops.Snapshot
	verdict     *verdict
	sideEffects []events.SideEffect
}

// attempt runs one attempt of a checkpoint and reports whether it
// committed.
func (r *runner) attempt(ctx context.Context, cp *assets.Checkpoint, n int) (bool, error) {
	// The provider is built before anything is touched: a missing key or
	// an unreadable fixture stops the run without spending an attempt.
	var provider agent.Provider
	if r.cfg.Spec.Backend == assets.BackendCLI {
		if r.cfg.CLI == nil || r.cfg.CLI.Attempts == nil || r.cfg.CLI.WriteMCPConfig == nil {
			return false, fmt.Errorf("checkpoint %s: no attempt was started: %w", cp.ID, ErrNoCLIBackend)
		}
	} else {
		var err error
		if provider, err = r.cfg.NewProvider(ctx, r.st.replayPosition); err != nil {
			return false, fmt.Errorf("checkpoint %s: no attempt was started: the agent's provider: %w", cp.ID, err)
		}
	}
	// A day whose scratch branch exists without an attempt on record (a
	// crash right after the snapshot, or a branch someone made) is skipped:
	// scratch branches are never overwritten.
	branch, err := r.snapshotBranch(ctx)
	if err != nil {
		return false, err
	}
	var snap *gitops.Snapshot
	day := r.st.lastDay() + 1
	for ; ; day++ {
		var err error
		snap, err = r.repo.CreateSnapshot(ctx, r.cfg.TaskID, day, branch)
		if errors.Is(err, gitops.ErrScratchExists) {
			continue
		}
		if err != nil {
			return false, fmt.Errorf("checkpoint %s attempt %d: snapshot: %w", cp.ID, n, err)
		}
		break
	}
	a := &attempt{r: r, id: events.Attempt{Checkpoint: cp.ID, Attempt: n, Day: day}, snap: snap}
	if err := record(ctx, r, events.GroundhogAttempt, events.DecisionID(events.GroundhogAttempt, r.cfg.TaskID, strconv.Itoa(day)), events.GroundhogAttemptData{
		Attempt: a.id, RunID: r.cfg.RunID, TaskBranch: snap.TaskBranch, ScratchBranch: snap.ScratchBranch,
		SnapshotRef: snap.SnapshotRef, PlanVersion: r.pin, Untracked: snap.Untracked,
	}); err != nil {
		return false, r.abort(ctx, a, err)
	}
	mem, err := r.cfg.Memory(ctx, r.cfg.TaskID, r.st.lastSeq)
	if err != nil {
		return false, r.abort(ctx, a, err)
	}
	var out *agent.Outcome
	var runErr error
	if provider == nil {
		out, runErr = a.cliSession(ctx, cp, mem)
	} else {
		out, runErr = a.session(ctx, provider, cp, mem)
	}
	if ctx.Err() != nil {
		return false, r.abort(ctx, a, ctx.Err())
	}
	if infrastructure(runErr) {
		// Not the agent's failure: the provider failed under it. The
		// attempt is closed as interrupted, which spends none of the
		// budget, and the run stops with the error. The report says only
		// what already happened (the provider failed); a crash before the
		// interruption is recorded is finished by the next run.
		report := syntheticReport(out, runErr)
		report.Source = sourceInfrastructure
		if provider == nil {
			report.WhatHappened = r.cliNames(report.WhatHappened)
		}
		if err := record(ctx, r, events.GroundhogAttemptFailed, "", events.GroundhogAttemptFailedData{Attempt: a.id, Report: report}); err != nil {
			return false, r.abort(ctx, a, err)
		}
		failpoint.Hit("groundhog-after-infrastructure-failure")
		return false, errors.Join(runErr, r.interrupt(ctx, a.id, snap, nil, "stopped: "+firstLine(runErr.Error())))
	}
	if a.verdict != nil {
		if err := record(ctx, r, events.GroundhogVerb, "", a.verbData()); err != nil {
			return false, r.abort(ctx, a, err)
		}
	}
	var report events.FailureReport
	switch {
	case a.verdict != nil && errors.Is(runErr, agent.ErrActedAfterStop):
		// What the agent started after its verb may have begun to run:
		// the verdict does not stand on a workspace it changed since.
		report = events.FailureReport{Source: "synthetic", WhatHappened: r.cliNames(
			"the attempt was closed by " + a.verdict.verb + ", then the agent went on: " + runErr.Error())}
	case a.verdict != nil && a.verdict.verb == VerbSuccess:
		v := &verifier{repo: r.repo, snap: snap, env: r.cfg.Env}
		if r.cfg.CLI != nil {
			v.sandbox = r.cfg.CLI.Sandbox
		}
		results, passed := v.check(ctx, cp)
		if err := record(ctx, r, events.GroundhogVerification, "", events.GroundhogVerificationData{Attempt: a.id, Passed: passed, Results: results}); err != nil {
			return false, r.abort(ctx, a, err)
		}
		if passed {
			failpoint.Hit("groundhog-after-verification")
			return true, r.commit(ctx, a)
		}
		red, err := r.baseline(ctx, a, cp, results)
		if err != nil {
			return false, r.abort(ctx, a, err)
		}
		if len(red) > 0 {
			rep := baselineReport(results, red, snap.SnapshotRef)
			if err := r.interrupt(ctx, a.id, snap, &rep, "baseline_red: the base fails the checks too"); err != nil {
				return false, err
			}
			return false, errBaselineRed
		}
		report = verifierReport(results)
	case a.verdict != nil:
		report = events.FailureReport{Source: "agent", WhatTried: a.verdict.whatTried, WhatHappened: a.verdict.whatHappened, NextAttemptPlan: a.verdict.nextAttemptPlan}
	default:
		report = syntheticReport(out, runErr)
		if provider == nil {
			report.WhatHappened = r.cliNames(report.WhatHappened)
		}
	}
	if err := record(ctx, r, events.GroundhogAttemptFailed, "", events.GroundhogAttemptFailedData{Attempt: a.id, Report: report}); err != nil {
		return false, r.abort(ctx, a, err)
	}
	failpoint.Hit("groundhog-before-rewind")
	return false, r.rewind(ctx, a.id, snap, "attempt failed ("+report.Source+"): "+firstLine(report.WhatHappened))
}

// session runs the attempt's agent: a fresh session whose prompt is built
// from the plan, the memory and the checkpoint, with the three verbs added
// to the activity's tools.
func (a *attempt) session(ctx context.Context, provider agent.Provider, cp *assets.Checkpoint, mem *Memory) (*agent.Outcome, error) {
	spec := &a.r.cfg.Spec
	tools := a.verbs()
	for _, name := range spec.Tools {
		if t, ok := agent.Builtin(name); ok {
			tools = append(tools, t)
		}
	}
	return agent.Run(ctx, agent.Config{
		Provider:  provider,
		Model:     spec.Model,
		System:    systemPrompt(spec.Instruction),
		Tools:     tools,
		ToolCtx:   &agent.ToolContext{Workspace: a.r.repo.Dir, Profile: a.r.cfg.Profile, AllowedPrograms: spec.AllowedPrograms, Env: a.r.cfg.Env},
		OnDenial:  spec.OnDenial,
		MaxTurns:  spec.MaxIterations,
		WallClock: time.Duration(spec.WallClockTimeoutSeconds) * time.Second,
		MaxTokens: spec.MaxTokens,
		Attempt:   a.id.Day,
		Emitter:   &emitter{a: a},
	}, Prompt(a.r.plan, mem, cp))
}

func (a *attempt) verbData() events.GroundhogVerbData {
	v := a.verdict
	return events.GroundhogVerbData{Attempt: a.id, Verb: v.verb, Summary: v.summary, SideEffects: v.sideEffects,
		WhatTried: v.whatTried, WhatHappened: v.whatHappened, NextAttemptPlan: v.nextAttemptPlan}
}

// commit lands a verified attempt as one squash commit and records it with
// its grounding record.
func (r *runner) commit(ctx context.Context, a *attempt) error {
	sha, noChange, err := r.repo.CommitSuccess(ctx, a.snap, a.verdict.summary, r.trailers(a.id))
	if err != nil {
		return fmt.Errorf("checkpoint %s: committing: %w", a.id.Checkpoint, err)
	}
	effects := append(append([]events.SideEffect(nil), a.sideEffects...), a.verdict.sideEffects...)
	c := events.GroundhogCommittedData{Attempt: a.id, SHA: sha, NoChange: noChange, Summary: a.verdict.summary, SideEffects: effects,
		HeldRef: r.heldRef(a.snap.TaskBranch)}
	return r.recordCommit(ctx, &c)
}

func (r *runner) recordCommit(ctx context.Context, c *events.GroundhogCommittedData) error {
	ctx = context.WithoutCancel(ctx)
	if err := record(ctx, r, events.GroundhogCommitted, events.DecisionID(events.GroundhogCommitted, r.cfg.TaskID, strconv.Itoa(c.Day)), *c); err != nil {
		return err
	}
	return r.ground(ctx, c)
}

// trailers identify a checkpoint's commit, so that a runner restarted
// after the commit and before its record recognises it.
func (r *runner) trailers(id events.Attempt) []gitops.Trailer {
	return []gitops.Trailer{
		{Key: "Groundhog-Task", Value: r.cfg.TaskID},
		{Key: "Groundhog-Checkpoint", Value: id.Checkpoint},
		{Key: "Groundhog-Day", Value: strconv.Itoa(id.Day)},
	}
}

// rewind captures the attempt's work on its scratch branch, resets the
// workspace to the snapshot, and records it.
func (r *runner) rewind(ctx context.Context, id events.Attempt, snap *gitops.Snapshot, reason string) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	sha, err := r.rewindWorkspace(ctx, id, snap, reason)
	if err != nil {
		return err
	}
	return r.recordRewound(ctx, id, snap, sha, reason)
}

// rewindWorkspace rewinds the workspace to the attempt's snapshot and
// returns the scratch branch's head, recording nothing.
func (r *runner) rewindWorkspace(ctx context.Context, id events.Attempt, snap *gitops.Snapshot, reason string) (string, error) {
	sha, err := r.repo.Rewind(ctx, snap, reason)
	if err != nil {
		return "", fmt.Errorf("checkpoint %s day %d: rewinding: %w", id.Checkpoint, id.Day, err)
	}
	failpoint.Hit("groundhog-after-rewind")
	return sha, nil
}

func (r *runner) recordRewound(ctx context.Context, id events.Attempt, snap *gitops.Snapshot, sha, reason string) error {
	return record(ctx, r, events.GroundhogRewound, events.DecisionID(events.GroundhogRewound, r.cfg.TaskID, strconv.Itoa(id.Day)),
		events.GroundhogRewoundData{Attempt: id, ScratchBranch: snap.ScratchBranch, ScratchSHA: sha, Reason: reason})
}

// interrupt closes an attempt that its run could not finish (the provider
// failed under it, or the run stopped) as an interruption, which spends
// none of the checkpoint's budget. Every record comes after what it says
// happened: the workspace is rewound first, then report (when not nil),
// groundhog.rewound and groundhog.interrupted are recorded. A rewind that
// is refused records nothing and returns the error. A crash between any
// two steps is finished by the next run: recoverOpen finds the attempt
// still open, or recordInterruptions finds it rewound without its
// interruption.
func (r *runner) interrupt(ctx context.Context, id events.Attempt, snap *gitops.Snapshot, report *events.FailureReport, reason string) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	sha, err := r.rewindWorkspace(ctx, id, snap, reason)
	if err != nil {
		return err
	}
	if report != nil {
		if err := record(ctx, r, events.GroundhogAttemptFailed, "", events.GroundhogAttemptFailedData{Attempt: id, Report: *report}); err != nil {
			return err
		}
	}
	if err := r.recordRewound(ctx, id, snap, sha, reason); err != nil {
		return err
	}
	failpoint.Hit("groundhog-before-interrupted")
	return r.recordInterrupted(ctx, id)
}

func (r *runner) recordInterrupted(ctx context.Context, id events.Attempt) error {
	return record(ctx, r, events.GroundhogInterrupted, events.DecisionID(events.GroundhogInterrupted, r.cfg.TaskID, strconv.Itoa(id.Day)),
		events.GroundhogInterruptedData{Attempt: id, RunID: r.cfg.RunID})
}

// recordInterruptions records the interruption of every attempt that a
// crash left rewound without it: one whose recorded failure is not the
// agent's (the provider failed, its run stopped, it was abandoned).
func (r *runner) recordInterruptions(ctx context.Context) error {
	for _, a := range r.st.attempts {
		if a.rewound != nil && !a.interrupted && !a.forgotten && interruption(a.failed) {
			if err := r.recordInterrupted(ctx, a.started.Attempt); err != nil {
				return err
			}
		}
	}
	return nil
}

// interruption reports whether a recorded failure closes its attempt as an
// interruption rather than as the agent's failure.
func interruption(f *events.GroundhogAttemptFailedData) bool {
	if f == nil {
		return false
	}
	switch f.Report.Source {
	case sourceInfrastructure, sourceInterrupted, sourceAbandoned, sourceBaselineRed:
		return true
	}
	return false
}

// abort closes an attempt that cannot go on (ctx ended: the run was
// cancelled or its engine is stopping; the log failed) as interrupted,
// which spends none of the budget: it is not the agent's failure. It
// returns cause, or with it the rewind's or the records' own error (a
// record that fails leaves the attempt open for the next run).
func (r *runner) abort(ctx context.Context, a *attempt, cause error) error {
	why := cause.Error()
	if ctx.Err() != nil {
		why = context.Cause(ctx).Error()
	}
	report := &events.FailureReport{Source: sourceInterrupted,
		WhatHappened: "the previous attempt was stopped before it finished (" + why + "); its work was rewound and kept on " + a.snap.ScratchBranch}
	if err := r.interrupt(ctx, a.id, a.snap, report, "stopped: "+why); err != nil {
		return errors.Join(cause, err)
	}
	return cause
}

// recoverOpen closes the attempt a crashed runner left open. A verified
// attempt is committed — or, if the crash fell after its commit, the
// commit is recognised by its trailers — and never committed twice. Any
// other open attempt is rewound to its snapshot and recorded as
// interrupted; the work is kept on its scratch branch.
func (r *runner) recoverOpen(ctx context.Context) error {
	open := r.st.open()
	if open == nil {
		return nil
	}
	s := open.started
	snap := &gitops.Snapshot{Task: r.cfg.TaskID, Day: s.Day, TaskBranch: s.TaskBranch, ScratchBranch: s.ScratchBranch,
		SnapshotRef: s.SnapshotRef, Untracked: s.Untracked}
	if open.verification != nil && open.verification.Passed && open.verb != nil {
		c := events.GroundhogCommittedData{Attempt: s.Attempt, Summary: open.verb.Summary, SideEffects: open.verb.SideEffects,
			HeldRef: r.heldRef(s.TaskBranch)}
		if sha, ok, err := r.findCommit(ctx, s); err != nil {
			return err
		} else if ok {
			c.SHA = sha
			return r.recordCommit(ctx, &c)
		}
		sha, noChange, err := r.repo.CommitSuccess(ctx, snap, open.verb.Summary, r.trailers(s.Attempt))
		if err != nil {
			return fmt.Errorf("checkpoint %s day %d: completing the commit: %w", s.Checkpoint, s.Day, err)
		}
		c.SHA, c.NoChange = sha, noChange
		return r.recordCommit(ctx, &c)
	}
	// A failure that is not the agent's (the provider failed, an abandon
	// stopped after its report, a recovery after its report) is finished
	// as the interruption it was: it spends no budget.
	if interruption(open.failed) {
		return r.interrupt(ctx, s.Attempt, snap, nil, "interrupted ("+open.failed.Report.Source+"): "+firstLine(open.failed.Report.WhatHappened))
	}
	if open.failed != nil {
		return r.rewind(ctx, s.Attempt, snap, "attempt failed ("+open.failed.Report.Source+"): "+firstLine(open.failed.Report.WhatHappened))
	}
	// The next attempt learns that this one was cut short: its work, which
	// was never verified, is gone from the workspace. That is recorded
	// once the rewind has happened.
	return r.interrupt(ctx, s.Attempt, snap, &events.FailureReport{
		Source: sourceInterrupted, WhatHappened: "the previous attempt was interrupted before it finished (its run stopped); its work was rewound and kept on " + s.ScratchBranch,
	}, "interrupted: the attempt was open when its run stopped")
}

// recoverStale takes the workspace off a scratch branch that no recorded
// attempt owns: a runner died between taking a snapshot and recording the
// attempt, so nothing ran on it. Its state is put back on the task branch
// (the branch itself is kept, and its day skipped).
func (r *runner) recoverStale(ctx context.Context) error {
	branch, err := r.repo.CurrentBranch(ctx)
	if err != nil || branch == r.st.task.Branch {
		return err
	}
	prefix, err := gitops.ScratchBranchName(r.cfg.TaskID, 1)
	if err != nil {
		return err
	}
	if !strings.HasPrefix(branch, strings.TrimSuffix(prefix, "1")) {
		return nil // not ours: CreateSnapshot will refuse the branch and say so
	}
	for _, a := range r.st.attempts {
		if a.started.ScratchBranch == branch {
			return nil
		}
	}
	day, err := strconv.Atoi(branch[strings.LastIndex(branch, "-")+1:])
	if err != nil {
		return nil
	}
	head, err := r.repo.BranchSHA(ctx, r.st.task.Branch)
	if err != nil {
		return err
	}
	snap := &gitops.Snapshot{Task: r.cfg.TaskID, Day: day, TaskBranch: r.st.task.Branch, ScratchBranch: branch, SnapshotRef: head}
	if snap.Untracked, err = r.repo.ChangedPaths(ctx, snap); err != nil {
		return err
	}
	_, err = r.repo.Rewind(ctx, snap, "a snapshot no attempt was recorded for")
	return err
}

// findCommit looks for the commit an attempt made: the task branch's head,
// whose first parent is the snapshot and whose trailers name the attempt.
func (r *runner) findCommit(ctx context.Context, s events.GroundhogAttemptData) (string, bool, error) {
	head, err := r.repo.BranchSHA(ctx, s.TaskBranch)
	if err != nil || head == s.SnapshotRef {
		return "", false, err
	}
	parent, err := r.repo.FirstParent(ctx, head)
	if err != nil || parent != s.SnapshotRef {
		return "", false, err
	}
	tr, err := r.repo.Trailers(ctx, head)
	if err != nil {
		return "", false, err
	}
	if tr["Groundhog-Task"] == r.cfg.TaskID && tr["Groundhog-Checkpoint"] == s.Checkpoint && tr["Groundhog-Day"] == strconv.Itoa(s.Day) {
		return head, true, nil
	}
	return "", false, nil
}

// infrastructure reports whether a session error is Orbit's or the
// provider's rather than the agent's: the turn limit, the wall clock and a
// terminating denial are the agent's failures; anything else (a provider
// error, a replay script that ran out) stops the run.
func infrastructure(err error) bool {
	if err == nil {
		return false
	}
	var denied *agent.DeniedError
	return !errors.As(err, &denied) && !errors.Is(err, agent.ErrTurnLimit) && !errors.Is(err, agent.ErrTimeout)
}

// verifierReport is the failure report of an attempt whose claimed success
// the verifier refuted.
func verifierReport(results []events.CriterionResult) events.FailureReport {
	var failed []string
	for _, res := range results {
		if res.Outcome != OutcomeFail {
			continue
		}
		line := res.Kind
		if res.Anti {
			line = "anti " + line
		}
		line += ": " + res.Detail
		if out := strings.TrimSpace(res.Output); out != "" {
			line += "\n  output (end): " + strings.ReplaceAll(lastLines(out, 15), "\n", "\n  ")
		}
		failed = append(failed, line)
	}
	return events.FailureReport{Source: "verifier", WhatHappened: fmt.Sprintf("the agent claimed success but %d check(s) failed", len(failed)), FailedCriteria: failed}
}

// syntheticReport is the failure report of an attempt that ended without a
// terminal verb.
func syntheticReport(out *agent.Outcome, err error) events.FailureReport {
	what := "the attempt ended without " + VerbSuccess + " or " + VerbFailure
	if out != nil && out.StopReason != "" {
		what += " (stop reason " + out.StopReason + ")"
	}
	if err != nil {
		what += ": " + err.Error()
	}
	if out != nil && out.FinalMessage != "" {
		what += "\nlast message: " + firstLine(out.FinalMessage)
	}
	return events.FailureReport{Source: "synthetic", WhatHappened: what}
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	return line
}

func lastLines(s string, n int) string {
	lines := strings.Split(s, "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// emitter records an attempt's agent events as Groundhog events of the
// task.
type emitter struct{ a *attempt }

func (e *emitter) Emit(ctx context.Context, typ string, payload any) error {
	switch d := payload.(type) {
	case events.AgentTurnData:
		return record(ctx, e.a.r, events.GroundhogTurn, "", events.GroundhogTurnData{Attempt: e.a.id, Turn: d})
	case events.ToolCalledData:
		return record(ctx, e.a.r, events.GroundhogToolCalled, "", events.GroundhogToolCalledData{Attempt: e.a.id, Call: d})
	case events.ToolDeniedData:
		return record(ctx, e.a.r, events.GroundhogToolDenied, "", events.GroundhogToolDeniedData{Attempt: e.a.id, Denial: d})
	case events.CLIInvocationFinishedData:
		// The task's budget spans runs: the session's account is recorded
		// on the task first, so a crash before the run's record leaves the
		// budget counting it.
		u := events.GroundhogUsageData{Attempt: e.a.id, Usage: d.Usage, CostUSD: d.CostUSD, UsageInTurns: d.UsageInTurns}
		if err := record(ctx, e.a.r, events.GroundhogUsage, "", u); err != nil {
			return err
		}
		return e.runEvent(ctx, typ, payload)
	case events.CLIInvocationStartedData, events.CLIOutputData, events.CLIHookRefusedData:
		return e.runEvent(ctx, typ, payload)
	}
	return fmt.Errorf("groundhog: no task event for %s", typ)
}

// runEvent appends a CLI agent's process and output records to the run, as
// an agent_loop's are: `orbit run tail` shows the agent at work.
func (e *emitter) runEvent(ctx context.Context, typ string, payload any) error {
	r := e.a.r
	_, err := r.cfg.Log.Append(ctx, events.Event{Type: typ, RunID: r.cfg.RunID, StepKey: r.cfg.StepKey, Job: r.cfg.Job}, payload)
	return err
}

func (e *emitter) PutBlob(ctx context.Context, data []byte) (events.BlobRef, error) {
	return e.a.r.cfg.Log.PutBlob(ctx, data)
}
