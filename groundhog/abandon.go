package groundhog

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/gitops"
)

// Outcomes of Abandon.
const (
	// AbandonNothingOpen: the task had no open attempt; nothing was
	// recorded or changed.
	AbandonNothingOpen = "nothing_open"
	// AbandonRewound: the open attempt was rewound (its work kept on its
	// scratch branch) and recorded as abandoned.
	AbandonRewound = "rewound"
	// AbandonKept: the open attempt was recorded as abandoned and the task
	// branch was not reset, because the repository is no longer where the
	// attempt left it (someone committed on the task branch, or switched
	// branches): the task branch keeps what was committed on it. On the
	// task branch, what the attempt left in the workspace was taken out of
	// it and kept on its scratch branch (SetAside); on another branch
	// nothing was touched.
	AbandonKept = "kept"
	// AbandonCommitted: the open attempt had been verified and its commit
	// was already the task branch's head; the commit was recorded, nothing
	// was reset.
	AbandonCommitted = "committed"
	// AbandonRefused: a run holds the task's workspace; nothing was done.
	AbandonRefused = "refused"
)

// Sources of the failure reports that close an attempt as an
// interruption (see interruption): an abandon's, a provider's failure's,
// and a run's that found the attempt open after a crash.
const (
	sourceAbandoned      = "abandoned"
	sourceInfrastructure = "infrastructure"
	sourceInterrupted    = "interrupted"
)

// Abandonment is what Abandon did.
type Abandonment struct {
	TaskID  string          `json:"task_id"`
	Outcome string          `json:"outcome"` // AbandonNothingOpen, AbandonRewound, …
	Attempt *events.Attempt `json:"attempt,omitempty"`
	// ScratchBranch and ScratchSHA are where the attempt's work is.
	ScratchBranch string `json:"scratch_branch,omitempty"`
	ScratchSHA    string `json:"scratch_sha,omitempty"`
	// CommitSHA is the recorded commit (AbandonCommitted).
	CommitSHA string `json:"commit_sha,omitempty"`
	// SetAside are the attempt's files that were taken out of the
	// workspace (AbandonKept), their content kept at ScratchSHA; Left are
	// changed files left in place because they may be someone's work.
	SetAside []string `json:"set_aside,omitempty"`
	Left     []string `json:"left_in_place,omitempty"`
	// HeldBy is who holds the workspace (AbandonRefused).
	HeldBy string `json:"held_by,omitempty"`
	// Status is the task's status afterwards.
	Status  string `json:"status,omitempty"`
	Message string `json:"message"`
}

// Abandon closes a task's open attempt for good, with git's care: the way
// out for an attempt that no run can close (a person committed on the task
// branch under it, so every resumed run fails closed).
//
// Under the task's workspace reservation, and only when no run holds it,
// it closes the open attempt:
//   - verified, with its commit already the task branch's head: the commit
//     is recorded (groundhog.committed and its grounding record), never
//     reset;
//   - otherwise the workspace is rewound to the attempt's snapshot, the
//     work kept on its scratch branch, and the attempt is recorded as
//     failed (source "abandoned", unless the agent's own failure — its
//     verb, the verifier's or a synthetic report — was already recorded),
//     rewound, and interrupted with who and why. An
//     interrupted attempt spends none of the checkpoint's budget;
//   - when the repository is not where the attempt left it (the task
//     branch moved, HEAD is on another branch, the scratch branch is gone)
//     the task branch is not reset, and the records say so
//     (workspace_kept). Rewind fails closed there: at most it has captured
//     the attempt's work on the scratch branch and switched to the task
//     branch as it is now, which loses nothing; on the task branch it also
//     takes what the attempt left in the workspace out of it, kept on the
//     scratch branch, so the next attempt starts from a clean tree, and
//     the message names those files and where they are.
//
// A task that was running becomes active. When a rewind is refused for
// another reason (tracked files a reset would lose), Abandon returns the
// error and records nothing. Abandon can be run again after a crash at
// any point.
func Abandon(ctx context.Context, cfg ControlConfig) (_ *Abandonment, err error) {
	res := &Abandonment{TaskID: cfg.TaskID}
	r, holder, err := reserve(ctx, cfg)
	if err != nil {
		return nil, err
	}
	if holder != "" {
		res.Outcome, res.HeldBy = AbandonRefused, holder
		res.Message = fmt.Sprintf("task %s: a run works in its workspace (%s); stop it (orbit run cancel <run>) or let it end, then abandon", cfg.TaskID, holder)
		return res, nil
	}
	defer func() { err = errors.Join(err, r.release(ctx)) }()
	a := &abandon{r: r, by: cfg.By, reason: cfg.Reason, res: res}
	if a.by == "" {
		a.by = "unknown"
	}
	if a.reason == "" {
		a.reason = "no reason given"
	}
	if err := a.close(ctx); err != nil {
		return nil, err
	}
	res.Status = r.st.status
	return res, nil
}

// abandon is one Abandon at work.
type abandon struct {
	r          *runner
	by, reason string
	res        *Abandonment
}

// close closes the open attempt, if there is one, and makes a running
// task active.
func (a *abandon) close(ctx context.Context) error {
	r := a.r
	open := r.st.open()
	if open == nil {
		a.res.Outcome = AbandonNothingOpen
		a.res.Message = fmt.Sprintf("task %s has no open attempt: nothing to abandon", r.cfg.TaskID)
		return nil
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	s := open.started
	a.res.Attempt, a.res.ScratchBranch = &s.Attempt, s.ScratchBranch
	who := "abandoned by " + a.by + ": " + a.reason
	if open.verification != nil && open.verification.Passed && open.verb != nil {
		sha, landed, err := r.findCommit(ctx, s)
		if err != nil {
			return err
		}
		if landed {
			c := events.GroundhogCommittedData{Attempt: s.Attempt, SHA: sha, Summary: open.verb.Summary, SideEffects: open.verb.SideEffects}
			if err := r.recordCommit(ctx, &c); err != nil {
				return err
			}
			a.res.Outcome, a.res.CommitSHA = AbandonCommitted, sha
			a.res.Message = fmt.Sprintf("task %s: day %d (%s) was verified and its commit %s is the head of %s: recorded it, reset nothing",
				r.cfg.TaskID, s.Day, s.Checkpoint, shortSHA(sha), s.TaskBranch)
			return a.activate(ctx, fmt.Sprintf("day %d (%s) %s; its commit %s was recorded", s.Day, s.Checkpoint, who, shortSHA(sha)))
		}
	}
	snap := &gitops.Snapshot{Task: r.cfg.TaskID, Day: s.Day, TaskBranch: s.TaskBranch, ScratchBranch: s.ScratchBranch,
		SnapshotRef: s.SnapshotRef, Untracked: s.Untracked}
	// The rewind comes before any record: one that is refused leaves
	// nothing recorded, and one cut short is done again by the next
	// abandon (or run), which finds the attempt still open.
	sha, rewindErr := r.repo.Rewind(ctx, snap, who)
	kept := errors.Is(rewindErr, gitops.ErrTaskBranchMoved) || errors.Is(rewindErr, gitops.ErrUnexpectedBranch) ||
		errors.Is(rewindErr, gitops.ErrBranchNotFound)
	if rewindErr != nil && !kept {
		return fmt.Errorf("task %s day %d (%s): rewinding: %w; nothing was recorded", r.cfg.TaskID, s.Day, s.Checkpoint, rewindErr)
	}
	a.res.ScratchSHA = sha
	reason, note := a.reason, ""
	var moved *gitops.MovedError
	switch {
	case errors.As(rewindErr, &moved):
		a.res.SetAside, a.res.Left = moved.SetAside, moved.Left
		note = movedNote(moved)
		reason += "; " + note
	case kept:
		where := "the workspace is where it was"
		if branch, err := r.repo.CurrentBranch(ctx); err == nil {
			where = "the workspace is on " + branch
		}
		note = fmt.Sprintf("the repository is not where the attempt left it (%v): nothing was touched, %s", rewindErr, where)
		reason += "; " + note
	}
	if !agentFailure(open.failed) {
		what := "the previous attempt was " + who
		if kept {
			what += "; the repository was not where it left it (someone committed on the task branch, or switched branches), so the task branch was not reset"
			if sha != "" {
				what += "; its work is kept on " + s.ScratchBranch
			}
		} else {
			what += "; its work was rewound and kept on " + s.ScratchBranch
		}
		if err := record(ctx, r, events.GroundhogAttemptFailed, "", events.GroundhogAttemptFailedData{Attempt: s.Attempt,
			Report: events.FailureReport{Source: sourceAbandoned, WhatHappened: what}}); err != nil {
			return err
		}
	}
	if !kept {
		if err := record(ctx, r, events.GroundhogRewound, events.DecisionID(events.GroundhogRewound, r.cfg.TaskID, strconv.Itoa(s.Day)),
			events.GroundhogRewoundData{Attempt: s.Attempt, ScratchBranch: s.ScratchBranch, ScratchSHA: sha, Reason: who}); err != nil {
			return err
		}
	}
	if err := record(ctx, r, events.GroundhogInterrupted, events.DecisionID(events.GroundhogInterrupted, r.cfg.TaskID, strconv.Itoa(s.Day)),
		events.GroundhogInterruptedData{Attempt: s.Attempt, AbandonedBy: a.by, Reason: reason, WorkspaceKept: kept,
			AbandonSigner: events.RequestSigner(ctx)}); err != nil {
		return err
	}
	a.res.Outcome = AbandonRewound
	a.res.Message = fmt.Sprintf("task %s: day %d (%s) abandoned; the workspace was rewound", r.cfg.TaskID, s.Day, s.Checkpoint)
	if kept {
		a.res.Outcome = AbandonKept
		a.res.Message = fmt.Sprintf("task %s: day %d (%s) abandoned; %s", r.cfg.TaskID, s.Day, s.Checkpoint, note)
	}
	if sha != "" && !strings.Contains(a.res.Message, s.ScratchBranch+" at") {
		a.res.Message += "; the attempt's work is on " + s.ScratchBranch + " at " + shortSHA(sha)
	}
	return a.activate(ctx, fmt.Sprintf("day %d (%s) %s", s.Day, s.Checkpoint, who))
}

// movedNote says what an abandon did when the task branch had moved under
// the attempt: it was not reset, and where the attempt's work is.
func movedNote(m *gitops.MovedError) string {
	var b strings.Builder
	fmt.Fprintf(&b, "task branch moved: %s went from %s to %s since the attempt began (someone committed on it) and was not reset",
		m.TaskBranch, shortSHA(m.SnapshotRef), shortSHA(m.Now))
	switch {
	case len(m.SetAside) > 0:
		fmt.Fprintf(&b, "; the attempt's files left in the workspace (%s) were taken out of it and are kept with its work on %s at %s",
			strings.Join(m.SetAside, ", "), m.ScratchBranch, shortSHA(m.ScratchSHA))
	case m.Clean():
		fmt.Fprintf(&b, "; the workspace holds nothing of the attempt, whose work is on %s at %s", m.ScratchBranch, shortSHA(m.ScratchSHA))
	}
	if len(m.Left) > 0 {
		fmt.Fprintf(&b, "; changed files that may be someone's work were left in place: %s", strings.Join(m.Left, ", "))
	}
	if m.Cause != nil {
		fmt.Fprintf(&b, "; nothing was taken out of the workspace: %v", m.Cause)
	}
	fmt.Fprintf(&b, "; the workspace is on %s at %s", m.TaskBranch, shortSHA(m.Now))
	return b.String()
}

// agentFailure reports whether a recorded failure is the agent's own
// account of the attempt (its verb, the verifier, or no verdict at all),
// which the next attempt learns from and an abandon keeps. A report a
// runner recorded while recovering (interrupted, infrastructure) is
// superseded by the abandon's.
func agentFailure(f *events.GroundhogAttemptFailedData) bool {
	if f == nil {
		return false
	}
	switch f.Report.Source {
	case "agent", "verifier", "synthetic":
		return true
	}
	return false
}

// activate puts a task in progress back in the backlog, saying why.
func (a *abandon) activate(ctx context.Context, reason string) error {
	if events.TaskStatusMeaning(a.r.st.status) != events.TaskInProgress {
		return nil
	}
	return a.r.setStatus(ctx, events.TaskBacklog, reason)
}
