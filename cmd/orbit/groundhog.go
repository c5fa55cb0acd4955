package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/orbitrun/orbit/assets"
	"github.com/orbitrun/orbit/engine"
	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/executor"
	"github.com/orbitrun/orbit/gitops"
	"github.com/orbitrun/orbit/groundhog"
	"github.com/orbitrun/orbit/projector"
)

// defaultGroundhogActivity runs `orbit groundhog run` without --activity.
const defaultGroundhogActivity = "groundhog_reference"

func (a *app) groundhogCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "groundhog", Short: "Run a task's checkpoint plan, and audit what happened"}
	cmd.AddCommand(a.groundhogRunCommand(), a.groundhogShowCommand(), a.groundhogVerifyCommand(), a.groundhogAbandonCommand(),
		a.groundhogApproveCommand(), a.groundhogRewindCommand())
	cmd.AddCommand(a.groundhogVerbCommands()...)
	return cmd
}

func (a *app) groundhogRunCommand() *cobra.Command {
	var activity string
	var detach bool
	cmd := &cobra.Command{
		Use:   "run <task_id> [--activity NAME]",
		Short: "Run a task's plan, one checkpoint at a time, until it is done or blocked",
		Long: `Run a task's checkpoint plan with a groundhog activity (default
groundhog_reference). Each attempt starts from a clean snapshot of the
workspace on a scratch branch groundhog/<task>/day-<n>; a verified checkpoint
lands as one squash commit on the task branch; a failed attempt is rewound.
The run is a job run: it prints its id and progress like 'orbit job run'.

Exit status: 0 every checkpoint committed; 1 blocked, drifted or failed.`,
		Args: exactArgs(1, "a task id"),
		RunE: a.withEngine(func(ctx context.Context, l *events.Log, args []string) error {
			cat, err := a.projectCatalog()
			if err != nil {
				return err
			}
			act, err := cat.Activity(activity)
			if err != nil {
				return err
			}
			a.warnCatalog(cat)
			if act.Spec.Type != assets.TypeGroundhog {
				return usageErr("activity %s is a %s activity, not a groundhog one", activity, act.Spec.Type)
			}
			last, err := l.LastSeq(ctx)
			if err != nil {
				return &exitError{code: exitUnavailable, err: err}
			}
			task, err := getTask(ctx, l, args[0], last)
			if err != nil {
				return err
			}
			if task.Plan == "" {
				return usageErr("task %s has no checkpoint plan; give it one with orbit task plan %s --file PLAN", task.ID, task.ID)
			}
			if task.Branch == "" {
				return usageErr("task %s has no branch for Groundhog to commit on; ship it (orbit run ship %s), which gives it a worktree and branch of its own", task.ID, task.ID)
			}
			job := groundhogJob(task.ID, act)
			req, err := executor.NewRunRequest(job, nil, requester())
			if err != nil {
				return err
			}
			return a.submit(ctx, l, req, detach, events.TaskFilter(task.ID))
		}),
	}
	cmd.Flags().StringVar(&activity, "activity", defaultGroundhogActivity, "the groundhog activity to run the task with")
	cmd.Flags().BoolVarP(&detach, "detach", "d", false, "print the run id and return without waiting")
	a.progressFlag(cmd)
	return cmd
}

// groundhogJob is the one-step job a Groundhog run of a task is. Its name
// is per task, so that (with max_active_runs 1) runs of one task queue
// behind each other while runs of different tasks do not.
func groundhogJob(taskID string, act *assets.Activity) *assets.Job {
	spec := act.Spec
	return &assets.Job{
		Name:   events.GroundhogJobPrefix + taskID,
		Source: "orbit groundhog run",
		Layer:  assets.LayerFile,
		Spec: assets.JobSpec{
			MaxActiveRuns: 1,
			Steps: []assets.Step{{
				ID:           "groundhog",
				Target:       "activity:" + act.Name,
				Activity:     &spec,
				DefaultInput: map[string]any{"task_id": taskID},
			}},
		},
	}
}

func (a *app) groundhogShowCommand() *cobra.Command {
	var memory, audit bool
	cmd := &cobra.Command{
		Use:   "show <task_id> [--memory | --audit]",
		Short: "Show a task's Groundhog chronicle, its memory, or its full audit record",
		Long: `Show what Groundhog did for a task: by default a chronicle of checkpoints,
attempts, verifier results, scratch branches and commits; with --memory the
GroundhogMemory view (all that later prompts may see); with --audit the whole
GroundhogRun record. --json prints the view itself.`,
		Args: exactArgs(1, "a task id"),
		RunE: a.withEngine(func(ctx context.Context, l *events.Log, args []string) error {
			if memory && audit {
				return usageErr("--memory and --audit are alternatives")
			}
			last, err := l.LastSeq(ctx)
			if err != nil {
				return &exitError{code: exitUnavailable, err: err}
			}
			q := engine.TaskQuery{TaskID: args[0], MinSeq: last}
			if memory {
				var m projector.GroundhogMemory
				if err := request(ctx, l, engine.EndpointGroundhogMemory, q, &m); err != nil {
					return err
				}
				if a.json {
					return a.printJSON(m)
				}
				a.printMemory(&m)
				return nil
			}
			var run projector.GroundhogRun
			if err := request(ctx, l, engine.EndpointGroundhogAudit, q, &run); err != nil {
				return err
			}
			if a.json {
				return a.printJSON(run)
			}
			a.printChronicle(&run, audit)
			return nil
		}),
	}
	cmd.Flags().BoolVar(&memory, "memory", false, "show the GroundhogMemory view")
	cmd.Flags().BoolVar(&audit, "audit", false, "show every event of every attempt")
	return cmd
}

func (a *app) printMemory(m *projector.GroundhogMemory) {
	a.printf("Task %s, plan version %d: %d checkpoints done\n", m.TaskID, m.PlanVersion, len(m.Checkpoints))
	for _, c := range m.Checkpoints {
		a.printf("\n%s  commit %s\n  %s\n", c.ID, shortSHA(c.Commit), strings.ReplaceAll(strings.TrimSpace(c.Summary), "\n", "\n  "))
		for _, se := range c.SideEffects {
			a.printf("  side effect: %s %s (reversible: %t)\n", se.Kind, se.Target, se.Reversible)
		}
	}
	if m.Active != nil {
		a.printf("\nActive: %s\n", m.Active.ID)
		if f := m.Active.LastFailure; f != nil {
			a.printf("  last failure (%s): %s\n", f.Source, firstLine(f.WhatHappened))
			for _, c := range f.FailedCriteria {
				a.printf("  - %s\n", firstLine(c))
			}
		}
	}
}

// printChronicle prints the audit record as a story: runs, then each
// checkpoint and its attempts. full adds every turn, tool call and denial.
func (a *app) printChronicle(r *projector.GroundhogRun, full bool) {
	a.printf("Task %s\n", r.TaskID)
	for _, run := range r.Runs {
		state := run.State
		if state == "" {
			state = "running"
		}
		a.printf("run %s  plan v%d  %s  %s\n", run.RunID, run.PlanVersion, state, run.Message)
	}
	for _, d := range r.Drifts {
		a.printf("drift: run %s pinned plan v%d, the plan is now v%d\n", d.RunID, d.PinnedVersion, d.CurrentVersion)
	}
	for _, c := range r.Control {
		what := c.Action + " " + c.Ref
		if c.Checkpoint != "" {
			what = "rewound " + c.Ref + " to before " + c.Checkpoint
		}
		a.printf("%s: %s -> %s by %s\n", what, shortSHA(c.FromSHA), shortSHA(c.ToSHA), signedBy(c.By, c.Signer, ", "))
	}
	for _, cp := range r.Checkpoints {
		line := fmt.Sprintf("\ncheckpoint %s: %s", cp.ID, cp.Status)
		if cp.SHA != "" {
			line += " (" + shortSHA(cp.SHA) + ")"
		}
		a.printf("%s\n", line)
		for _, at := range cp.Attempts {
			a.printf("  attempt %d (day %d) on %s from %s: %s\n", at.Attempt, at.Day, at.ScratchBranch, shortSHA(at.SnapshotRef), at.Outcome)
			if full {
				for _, t := range at.Turns {
					a.printf("    turn %d  %s  %s  tools %s\n", t.Turn, t.Model, t.StopReason, strings.Join(t.ToolUses, ","))
				}
				for _, c := range at.ToolCalls {
					errText := ""
					if c.Error != "" {
						errText = "  error: " + firstLine(c.Error)
					}
					a.printf("    tool %s  %d bytes in, %d out%s\n", c.Name, c.InputSize, c.ResultSize, errText)
				}
				for _, d := range at.Denials {
					a.printf("    denied %s: %s\n", d.Name, d.Reason)
				}
			}
			for _, se := range at.SideEffects {
				a.printf("    side effect: %s %s\n", se.Kind, se.Target)
			}
			if at.Verb != nil {
				text := at.Verb.Summary
				if text == "" {
					text = at.Verb.WhatHappened
				}
				a.printf("    %s: %s\n", strings.TrimPrefix(at.Verb.Verb, "orbit.groundhog."), firstLine(text))
			}
			for _, v := range at.Verifications {
				verdict := "failed"
				if v.Passed {
					verdict = "passed"
				}
				a.printf("    verifier %s\n", verdict)
				for _, res := range v.Results {
					kind := res.Kind
					if res.Anti {
						kind = "anti " + kind
					}
					a.printf("      %-7s %-22s %s\n", res.Outcome, kind, firstLine(res.Detail))
				}
			}
			if at.Failure != nil && (at.Verb == nil || at.Failure.Source != "agent") {
				a.printf("    failure (%s): %s\n", at.Failure.Source, firstLine(at.Failure.WhatHappened))
			}
			if at.Rewind != nil {
				a.printf("    rewound; work kept on %s at %s\n", at.Rewind.ScratchBranch, shortSHA(at.Rewind.ScratchSHA))
			}
			if ab := at.Abandon; ab != nil {
				a.printf("    abandoned by %s: %s\n", signedBy(ab.By, ab.Signer, ", "), firstLine(ab.Reason))
			}
			if at.Commit != nil {
				if at.Commit.NoChange {
					a.printf("    succeeded without changes: no commit\n")
				} else {
					a.printf("    committed %s: %s\n", shortSHA(at.Commit.SHA), firstLine(at.Commit.Summary))
				}
			}
		}
	}
	if len(r.Groundings) > 0 {
		g := r.Groundings[len(r.Groundings)-1]
		a.printf("\ngrounding: %d records, last %s after %s\n", len(r.Groundings), shortSHA(strings.TrimPrefix(g.StateHash, "sha256-")), g.Checkpoint)
	}
}

func (a *app) groundhogVerifyCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "verify <task_id>",
		Short: "Replay a task's events against its repository and check them",
		Long: `Replay a task's events and check them against its git repository: every
committed sha exists and is on the task branch in the recorded order, every
commit has its grounding record and the chain of state hashes recomputes, no
attempt is left open, and the workspace is on the task branch with no
uncommitted change to tracked files. Exit status 1 on any failed check.`,
		Args: exactArgs(1, "a task id"),
		RunE: a.withEngine(func(ctx context.Context, l *events.Log, args []string) error {
			evs, err := l.Read(ctx, events.FollowOptions{Filters: []string{events.TaskFilter(args[0])}})
			if err != nil {
				return &exitError{code: exitUnavailable, err: err}
			}
			if len(evs) == 0 {
				return usageErr("no task %s (orbit task list lists the tasks)", clip(args[0]))
			}
			workspace, err := groundhog.Workspace(evs)
			if err != nil {
				return err
			}
			repo, err := gitops.Open(workspace)
			if err != nil {
				return &exitError{code: exitUnsuccess, err: fmt.Errorf("task %s workspace: %w", args[0], err)}
			}
			rep, err := groundhog.Verify(ctx, evs, repo)
			if err != nil {
				return err
			}
			if a.json {
				if err := a.printJSON(rep); err != nil {
					return err
				}
			} else {
				for _, c := range rep.Checks {
					mark := "ok  "
					if !c.OK {
						mark = "FAIL"
					}
					a.printf("%s  %-18s %s\n", mark, c.What, c.Detail)
				}
				verdict := "verified"
				if !rep.OK {
					verdict = "NOT verified"
				}
				a.printf("task %s: %d commits, %s\n", rep.TaskID, rep.Commits, verdict)
			}
			if !rep.OK {
				return unsuccessful
			}
			return nil
		}),
	}
}

func shortSHA(sha string) string {
	if len(sha) > 12 {
		return sha[:12]
	}
	return sha
}
