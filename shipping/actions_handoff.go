package shipping

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/orbitrun/orbit/activity"
	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/gitops"
	"github.com/orbitrun/orbit/projector"
)

// handoffInput is what the executor gives a job's failure_activity.
type handoffInput struct {
	RunID   string `json:"run_id"`
	Job     string `json:"job"`
	StepKey string `json:"step_key"`
	Error   struct {
		Kind    string `json:"kind"`
		Message string `json:"message"`
	} `json:"error"`
}

// prFailureHandoff is task_pr_pipeline's failure_activity: when a run
// fails, its work is made recoverable rather than lost. Uncommitted work
// in the run's worktree is committed; the branch is pushed without
// overwriting anything (a lease on origin's branch, which the local
// branch must descend from); a pull request is opened, or the open one
// reused, and marked blocked with the failure; the tasks go to blocked.
// The run's failure stands whatever this does.
//
// Each part finds what an earlier call did: nothing left to commit, a
// branch already pushed, an open pull request, a task already blocked by
// this run with this pull request on record (then it is not marked again).
func (s *Service) prFailureHandoff(ctx context.Context, call *activity.ActionCall) (any, error) {
	const action = "pr_failure_handoff"
	var in handoffInput
	if err := decodeInput(action, call.Input, &in); err != nil {
		return nil, err
	}
	if in.RunID == "" {
		in.RunID = call.RunID
	}
	out := map[string]any{"phase": "failure_handoff", "failed_step_id": in.StepKey}
	tasks, err := s.tookBy(ctx, in.RunID)
	if err != nil {
		return nil, err
	}
	if len(tasks) == 0 {
		out["decision"] = "no_candidate" // the run failed before it took a task
		return out, nil
	}
	path := filepath.Join(WorktreesDir(s.cfg.Root), in.RunID)
	if _, err := os.Stat(path); err != nil {
		out["decision"] = "no_candidate"
		return out, nil
	}
	wt, err := s.open(path)
	if err != nil {
		return nil, failf("%s: %v", action, err)
	}
	main, err := s.mainOf(ctx, wt.Dir)
	if err != nil {
		return nil, err
	}
	head, err := wt.CurrentBranch(ctx)
	if err != nil {
		return nil, failf("%s: %v", action, err)
	}
	sha, files, err := s.commitCandidate(ctx, main, wt, tasks, in)
	if err != nil {
		return nil, err
	}
	out["branch"], out["head_sha"], out["committed_files"] = head, sha, toAny(files)
	base := tasks[0].Base
	if base == "" {
		base = "main"
	}
	if sha == tasks[0].BaseSHA {
		out["decision"] = "no_candidate" // nothing was done: nothing to hand over
		return out, s.blockTasks(ctx, tasks, in, nil, call.RunID)
	}
	pushed, err := s.pushCandidate(ctx, main, head, sha)
	if err != nil {
		return nil, err
	}
	out["push"] = pushed
	if pushed == "refused" {
		out["decision"] = "blocked_unpushed"
		return out, s.blockTasks(ctx, tasks, in, nil, call.RunID)
	}
	forge, err := s.forgeOf(ctx, main)
	if err != nil {
		out["decision"], out["forge_error"] = "blocked_no_pr", err.Error()
		return out, s.blockTasks(ctx, tasks, in, nil, call.RunID)
	}
	pr, err := forge.OpenFor(ctx, head)
	if err != nil {
		return nil, retryf("%s: %v", action, err)
	}
	created := pr == nil
	body := blockedBody(tasks, in, tasks[0].BaseSHA, sha)
	if created {
		pr, err = forge.Open(ctx, NewPullRequest{Title: "[BLOCKED] " + prTitle(tasks), Body: body, Head: head, Base: base})
		if err != nil {
			return nil, retryf("%s: %v", action, err)
		}
	}
	rec := &events.TaskPullRequest{Number: pr.Number, URL: pr.URL, Head: head, Base: base, Blocked: true}
	if !blockedOnRecord(tasks, rec) {
		if err := forge.MarkBlocked(ctx, pr.Number, body); err != nil {
			return nil, retryf("%s: %v", action, err)
		}
	}
	if err := s.blockTasks(ctx, tasks, in, rec, call.RunID); err != nil {
		return nil, err
	}
	out["decision"], out["pr_number"], out["pr_url"], out["pr_created"], out["task_status"] =
		"blocked_failure_pr", fmt.Sprint(pr.Number), pr.URL, created, events.TaskBlocked
	return out, nil
}

// commitCandidate commits whatever the worktree holds that is not
// committed, naming the tasks and the failure, and returns the branch's
// head and the files committed.
func (s *Service) commitCandidate(ctx context.Context, main, wt *gitops.Repo, tasks []*projector.TaskView, in handoffInput) (string, []string, error) {
	defer s.lockRepo(main.Dir)()
	before, err := wt.HeadSHA(ctx)
	if err != nil {
		return "", nil, err
	}
	msg := commitMessage(tasks, in.RunID)
	subject, rest, _ := strings.Cut(msg, "\n")
	msg = subject + " (blocked: " + in.StepKey + " failed)\n" + rest
	sha, committed, err := wt.CommitAll(ctx, msg)
	if err != nil {
		return "", nil, failf("pr_failure_handoff: committing the worktree's work: %v", err)
	}
	if !committed {
		return sha, nil, nil
	}
	files, err := wt.ChangedFiles(ctx, before, sha)
	return sha, files, err
}

// pushCandidate pushes the branch with a lease on origin's branch as it
// is, which the local one must descend from: nothing of anyone else's is
// overwritten. It reports pushed, already_pushed or refused.
func (s *Service) pushCandidate(ctx context.Context, main *gitops.Repo, branch, sha string) (string, error) {
	defer s.lockRepo(main.Dir)()
	remote, exists, err := main.RemoteBranch(ctx, s.cfg.Remote, branch)
	if err != nil {
		return "", retryf("pr_failure_handoff: %v", err)
	}
	if exists && remote == sha {
		return "already_pushed", nil
	}
	if exists {
		fetched, err := main.Fetch(ctx, s.cfg.Remote, branch)
		if err != nil {
			return "", retryf("pr_failure_handoff: %v", err)
		}
		if ok, err := main.IsAncestor(ctx, fetched, sha); err != nil {
			return "", err
		} else if !ok {
			s.log.Warn("the blocked branch is not pushed: origin has commits it lacks", "branch", branch, "origin", short(fetched), "local", short(sha))
			return "refused", nil
		}
	}
	err = main.PushLease(ctx, s.cfg.Remote, sha, branch, remote)
	if errors.Is(err, gitops.ErrBranchMoved) {
		return "refused", nil
	}
	if err != nil {
		return "", retryf("pr_failure_handoff: %v", err)
	}
	return "pushed", nil
}

// blockedOnRecord reports whether every task already records the pull
// request as blocked: an earlier call marked it.
func blockedOnRecord(tasks []*projector.TaskView, pr *events.TaskPullRequest) bool {
	for _, t := range tasks {
		if t.PullRequest == nil || *t.PullRequest != *pr {
			return false
		}
	}
	return true
}

// blockTasks records the blocked pull request (when there is one) on each
// task the run still has in progress, and moves it to blocked, once.
func (s *Service) blockTasks(ctx context.Context, tasks []*projector.TaskView, in handoffInput, pr *events.TaskPullRequest, stepRun string) error {
	reason := fmt.Sprintf("run %s failed at %s: %s", in.RunID, in.StepKey, oneLine(in.Error.Message))
	if pr != nil {
		reason += fmt.Sprintf("; its work is on pull request #%d, marked blocked", pr.Number)
	}
	for _, t := range tasks {
		if events.TaskStatusMeaning(t.Status) != events.TaskInProgress && t.Status != events.TaskBlocked {
			continue // moved on meanwhile (review, done): left alone
		}
		if pr != nil && (t.PullRequest == nil || *t.PullRequest != *pr) {
			if _, err := s.appendTask(ctx, t.ID, events.DecisionID(events.TaskUpdated, t.ID, in.RunID, "blocked-pull-request"), events.TaskUpdated,
				events.TaskUpdatedData{PullRequest: pr, By: "run:" + stepRun, RunID: in.RunID}); err != nil {
				return err
			}
		}
		if t.Status == events.TaskBlocked {
			continue
		}
		if _, err := s.setStatus(ctx, t, events.DecisionID(events.TaskStatusChanged, t.ID, in.RunID, "blocked"), events.TaskBlocked,
			"run:"+stepRun, reason, in.RunID); err != nil {
			return err
		}
	}
	return nil
}

// blockedBody is the body and the comment of a blocked pull request: what
// failed, where, and what a person does next.
func blockedBody(tasks []*projector.TaskView, in handoffInput, baseSHA, head string) string {
	var b strings.Builder
	b.WriteString("## Blocked: manual resolution required\n\n")
	b.WriteString("Orbit's shipping run stopped before this change was ready for review. Its work was committed and pushed so that nothing is lost; finish it by hand, or ship the task again.\n\n")
	for _, t := range tasks {
		fmt.Fprintf(&b, "- Task: `%s` %s\n", t.ID, oneLine(t.Title))
	}
	fmt.Fprintf(&b, "- Run: `%s`\n- Failed step: `%s`\n- Error kind: `%s`\n- Base: `%s`\n- Head: `%s`\n\n", in.RunID, in.StepKey, in.Error.Kind, baseSHA, head)
	fmt.Fprintf(&b, "## Failure\n\n```text\n%s\n```\n", strings.TrimSpace(in.Error.Message))
	return b.String()
}
