package shipping

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/orbitrun/orbit/activity"
	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/gitops"
	"github.com/orbitrun/orbit/projector"
)

// prInput is the input of pr_open and pr_promote (the upstream
// activities' fields Orbit reads).
type prInput struct {
	taskIDsInput
	baseInput
	CompletedTaskIDs []string `json:"completed_task_ids"`
	JobRunID         string   `json:"job_run_id"`
	WorkspacePath    string   `json:"workspace_path"`
	Head             string   `json:"head"`
	// Title and Body are any: a job passes null for "none" (the upstream
	// default input), and a body is kept verbatim.
	Title          any  `json:"title"`
	Body           any  `json:"body"`
	PRNumber       any  `json:"pr_number"`
	PRURL          any  `json:"pr_url"`
	NoDiffExpected bool `json:"no_diff_expected"`
}

// run is the run the step works for: job_run_id, else the step's own.
func (in *prInput) run(call *activity.ActionCall) string {
	if in.JobRunID != "" {
		return in.JobRunID
	}
	return call.RunID
}

// prTasks reads the tasks the step delivers: those it names, else those
// its run took; a task with no execution summary is refused.
func (s *Service) prTasks(ctx context.Context, action string, in *prInput, runID string) ([]*projector.TaskView, error) {
	in.TaskIDs = append(in.TaskIDs, in.CompletedTaskIDs...)
	tasks, err := s.runTasks(ctx, action, in.taskIDsInput, runID)
	if err != nil {
		return nil, err
	}
	if err := refuseUnsummarised(action, tasks); err != nil {
		return nil, err
	}
	return tasks, nil
}

// refuseUnsummarised fails, naming the task, when a task to deliver has
// no execution summary that says what was done: a pull request and a
// reviewer read that record (seed §8.11).
func refuseUnsummarised(action string, tasks []*projector.TaskView) error {
	for _, t := range tasks {
		if !meaningfulSummary(t.ExecutionSummary) {
			return failf("%s: task %s has no execution summary saying what was done, so it is not delivered; "+
				"its implementer records one (orbit.task.summary, orbit task update %s --summary …)", action, t.ID, t.ID)
		}
	}
	return nil
}

// textOf reads an optional text input: null or absent is "", a string is
// itself, anything else its JSON.
func textOf(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	}
	raw, _ := json.Marshal(v)
	return string(raw)
}

// prOpen opens the pull request of the run's branch into the base, once:
// an open pull request whose head is the branch is found first and
// reused, so a resumed run never opens two. It refuses tasks without a
// meaningful execution summary (naming them) and a branch origin does not
// have as it is (push first). A given body is sent verbatim; without one
// the body is built from the tasks.
func (s *Service) prOpen(ctx context.Context, call *activity.ActionCall) (any, error) {
	const action = "pr_open"
	var in prInput
	if err := decodeInput(action, call.Input, &in); err != nil {
		return nil, err
	}
	if in.WorkspacePath == "" {
		return nil, activity.Failure(events.KindValidation, false, "%s: input.workspace_path is required", action)
	}
	base, err := baseBranch(action, in.Base, in.BaseBranch)
	if err != nil {
		return nil, err
	}
	run := in.run(call)
	tasks, err := s.prTasks(ctx, action, &in, run)
	if err != nil {
		return nil, err
	}
	wt, main, head, err := s.headOf(ctx, action, in.WorkspacePath, in.Head)
	if err != nil {
		return nil, err
	}
	local, err := main.BranchSHA(ctx, head)
	if err != nil {
		return nil, failf("%s: %v", action, err)
	}
	remote, exists, err := main.RemoteBranch(ctx, s.cfg.Remote, head)
	if err != nil {
		return nil, retryf("%s: %v", action, err)
	}
	if !exists || remote != local {
		where := "does not have it"
		if exists {
			where = "has it at " + short(remote)
		}
		return nil, failf("%s: %s is at %s and %s %s; push it first (git_push)", action, head, short(local), s.cfg.Remote, where)
	}
	forge, err := s.forgeOf(ctx, main)
	if err != nil {
		return nil, failf("%s: %v", action, err)
	}
	out := map[string]any{"phase": "pr_open", "base": base, "head": head, "head_sha": local, "job_run_id": run}
	pr, err := forge.OpenFor(ctx, head)
	if err != nil {
		return nil, retryf("%s: %v", action, err)
	}
	if pr != nil {
		out["decision"], out["pr_created"], out["pr_reused"] = "reused", false, true
	} else {
		title := strings.TrimSpace(textOf(in.Title))
		if title == "" {
			title = prTitle(tasks)
		}
		body := textOf(in.Body)
		if strings.TrimSpace(body) == "" {
			files, err := wt.ChangedFiles(ctx, s.mergeBase(ctx, main, base, local), local)
			if err != nil {
				return nil, err
			}
			body = prBody(tasks, run, files)
		}
		if pr, err = forge.Open(ctx, NewPullRequest{Title: title, Body: body, Head: head, Base: base}); err != nil {
			return nil, retryf("%s: %v", action, err)
		}
		s.log.Info("pull request opened", "run", call.RunID, "number", pr.Number, "head", head, "base", base)
		out["decision"], out["pr_created"], out["pr_reused"] = "performed", true, false
	}
	out["pr_number"], out["pr_url"] = fmt.Sprint(pr.Number), pr.URL
	return out, nil
}

// headOf opens the worktree and its repository and returns the branch a
// PR step works on: head when given (which must be checked out there),
// else the worktree's branch.
func (s *Service) headOf(ctx context.Context, action, workspace, head string) (*gitops.Repo, *gitops.Repo, string, error) {
	wt, err := s.open(workspace)
	if err != nil {
		return nil, nil, "", failf("%s: %v", action, err)
	}
	main, err := s.mainOf(ctx, wt.Dir)
	if err != nil {
		return nil, nil, "", err
	}
	cur, err := wt.CurrentBranch(ctx)
	if err != nil {
		return nil, nil, "", failf("%s: %v", action, err)
	}
	if head != "" && head != cur {
		return nil, nil, "", failf("%s: the branch %s is not the one checked out in %s (%s)", action, head, wt.Dir, cur)
	}
	return wt, main, cur, nil
}

// forgeOf returns the forge of repo's origin.
func (s *Service) forgeOf(ctx context.Context, repo *gitops.Repo) (Forge, error) {
	u, err := repo.RemoteURL(ctx, s.cfg.Remote)
	if err != nil {
		return nil, err
	}
	return s.forgeFor(u)
}

// mergeBase is where the branch at head left origin's base, for the list
// of changed files: the remote-tracking base when the repository has it,
// else the local one.
func (s *Service) mergeBase(ctx context.Context, repo *gitops.Repo, base, head string) string {
	for _, ref := range []string{"refs/remotes/" + s.cfg.Remote + "/" + base, "refs/heads/" + base} {
		if sha, ok, err := repo.Resolve(ctx, ref); err == nil && ok {
			if mb, err := repo.MergeBase(ctx, sha, head); err == nil {
				return mb
			}
		}
	}
	return head
}

// prTitle is a pull request's default title: the task's, or the ids of a
// bundle.
func prTitle(tasks []*projector.TaskView) string {
	if len(tasks) == 1 {
		return tasks[0].ID + ": " + oneLine(tasks[0].Title)
	}
	return strings.Join(taskIDs(tasks), ", ") + fmt.Sprintf(": ship %d tasks", len(tasks))
}

// prBody is a pull request's default body: each task with its acceptance
// criteria and execution summary, the files changed, and the run.
func prBody(tasks []*projector.TaskView, runID string, files []string) string {
	var b strings.Builder
	for _, t := range tasks {
		fmt.Fprintf(&b, "## %s: %s\n\n", t.ID, oneLine(t.Title))
		if d := strings.TrimSpace(t.Description); d != "" {
			fmt.Fprintf(&b, "%s\n\n", d)
		}
		if len(t.AcceptanceCriteria) > 0 {
			b.WriteString("Acceptance criteria:\n")
			for _, a := range t.AcceptanceCriteria {
				fmt.Fprintf(&b, "- %s\n", a)
			}
			b.WriteString("\n")
		}
		fmt.Fprintf(&b, "### Execution summary\n\n%s\n\n", strings.TrimSpace(t.ExecutionSummary))
	}
	if len(files) > 0 {
		b.WriteString("### Files changed\n\n")
		for _, f := range files {
			fmt.Fprintf(&b, "- `%s`\n", f)
		}
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "Shipped by Orbit run `%s`.\n", runID)
	return b.String()
}

// prPromote moves the delivered tasks to review, each once, recording the
// pull request on them; a bundle that changed nothing (no_diff_expected)
// goes to review without one. A task without a meaningful execution
// summary is refused, naming it.
func (s *Service) prPromote(ctx context.Context, call *activity.ActionCall) (any, error) {
	const action = "pr_promote"
	var in prInput
	if err := decodeInput(action, call.Input, &in); err != nil {
		return nil, err
	}
	run := in.run(call)
	tasks, err := s.prTasks(ctx, action, &in, run)
	if err != nil {
		return nil, err
	}
	number := textOf(in.PRNumber)
	var pr *events.TaskPullRequest
	if !in.NoDiffExpected {
		n := 0
		if _, err := fmt.Sscanf(number, "%d", &n); err != nil || n <= 0 {
			return nil, activity.Failure(events.KindValidation, false, "%s: input.pr_number %q is not a pull request's number", action, number)
		}
		base, err := baseBranch(action, in.Base, in.BaseBranch)
		if err != nil {
			return nil, err
		}
		pr = &events.TaskPullRequest{Number: n, URL: textOf(in.PRURL), Head: in.Head, Base: base}
	}
	performed, reused := []any{}, []any{}
	for _, t := range tasks {
		status := events.TaskStatusMeaning(t.Status)
		if status == events.TaskReview || status == events.TaskDone {
			reused = append(reused, t.ID)
			continue
		}
		if pr != nil && (t.PullRequest == nil || *t.PullRequest != *pr) {
			if _, err := s.appendTask(ctx, t.ID, events.DecisionID(events.TaskUpdated, t.ID, run, "pull-request", number), events.TaskUpdated,
				events.TaskUpdatedData{PullRequest: pr, By: "run:" + call.RunID, RunID: run}); err != nil {
				return nil, err
			}
		}
		reason := "pull request #" + number + " opened"
		if pr == nil {
			reason = "nothing to change: no pull request"
		}
		if _, err := s.setStatus(ctx, t, events.DecisionID(events.TaskStatusChanged, t.ID, run, "promoted"), events.TaskReview,
			"run:"+call.RunID, reason, run); err != nil {
			return nil, err
		}
		performed = append(performed, t.ID)
	}
	decision := "performed"
	if len(performed) == 0 {
		decision = "reused"
	}
	return map[string]any{"phase": "promote", "decision": decision, "performed_task_ids": performed, "reused_task_ids": reused,
		"pr_number": number}, nil
}
