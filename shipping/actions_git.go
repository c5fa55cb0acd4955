package shipping

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/orbitrun/orbit/activity"
	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/gitops"
	"github.com/orbitrun/orbit/projector"
)

// worktreeSetupInput is worktree_setup's input (the upstream activity's).
type worktreeSetupInput struct {
	taskIDsInput
	baseInput
	BranchPrefix string `json:"branch_prefix"`
}

// worktreeSetup makes the run's worktree: a branch of its own, started at
// the base (origin/<base> freshly fetched, or the local base), in a linked
// work tree under .orbit/state/worktrees/<run>; then it takes the tasks in
// progress and gives them the worktree. The repository's own checkout is
// never touched.
//
// A second call for the run finds the first one's work: the base it
// recorded (or, before its record, the branch it made), the worktree.
func (s *Service) worktreeSetup(ctx context.Context, call *activity.ActionCall) (any, error) {
	const action = "worktree_setup"
	var in worktreeSetupInput
	if err := decodeInput(action, call.Input, &in); err != nil {
		return nil, err
	}
	ids, err := in.ids(action)
	if err != nil {
		return nil, err
	}
	base, sync, err := in.parse(action)
	if err != nil {
		return nil, err
	}
	prefix := strings.Trim(in.BranchPrefix, "/")
	if prefix == "" {
		prefix = "orbit"
	}
	tasks, err := s.tasksOf(ctx, ids)
	if err != nil {
		return nil, err
	}
	for _, t := range tasks {
		if t.Workspace != tasks[0].Workspace {
			return nil, failf("%s: tasks %s and %s are in different repositories (%s, %s); a bundle ships in one", action, tasks[0].ID, t.ID, tasks[0].Workspace, t.Workspace)
		}
		if hasRun(t, call.RunID, projector.TaskRunShip) {
			continue
		}
		if err := checkAdmission(t.ID, t.Status, action); err != nil {
			return nil, failf("%v", err)
		}
	}
	repo, err := s.mainOf(ctx, tasks[0].Workspace)
	if err != nil {
		return nil, failf("%s: task %s's repository: %v", action, tasks[0].ID, err)
	}
	defer s.lockRepo(repo.Dir)()

	path := filepath.Join(WorktreesDir(s.cfg.Root), call.RunID)
	branch := branchName(prefix, ids, call.RunID)
	baseSHA, err := s.setupBase(ctx, repo, tasks[0], call.RunID, branch, base, sync)
	if err != nil {
		return nil, err
	}
	s.log.Debug("worktree", "run", call.RunID, "path", path, "branch", branch, "base", short(baseSHA))
	if _, err := repo.AddWorktree(ctx, path, branch, baseSHA); err != nil {
		if errors.Is(err, gitops.ErrWorktreeExists) || errors.Is(err, gitops.ErrBranchExists) || errors.Is(err, gitops.ErrInvalidArgument) {
			return nil, failf("%s: %v", action, err)
		}
		return nil, err
	}
	by := "run:" + call.RunID
	for _, t := range tasks {
		if events.TaskStatusMeaning(t.Status) != events.TaskInProgress {
			if _, err := s.setStatus(ctx, t, events.DecisionID(events.TaskStatusChanged, t.ID, call.RunID, "admitted"),
				events.TaskInProgress, by, "workflow admission: "+call.Job, call.RunID); err != nil {
				return nil, err
			}
		}
		if !hasRun(t, call.RunID, projector.TaskRunShip) {
			if _, err := s.appendTask(ctx, t.ID, events.DecisionID(events.TaskWorktreeAssigned, t.ID, call.RunID), events.TaskWorktreeAssigned,
				events.TaskWorktreeAssignedData{RunID: call.RunID, Repository: repo.Dir, Worktree: path, Branch: branch, Base: base, BaseSHA: baseSHA}); err != nil {
				return nil, err
			}
		}
	}
	return map[string]any{
		"job_run_id": call.RunID, "batch_id": call.RunID, "task_ids": ids,
		"workspace_path": path, "head_ref": branch, "base": base, "base_ref": s.baseRef(base, sync), "base_sha": baseSHA,
	}, nil
}

// setupBase returns the commit a run's worktree starts at: the one it
// recorded, or the one its branch was made at by an earlier call cut
// short, or else the base now (fetched from the remote, or the local
// branch).
func (s *Service) setupBase(ctx context.Context, repo *gitops.Repo, t *projector.TaskView, runID, branch, base string, sync baseSync) (string, error) {
	if hasRun(t, runID, projector.TaskRunShip) && t.BaseSHA != "" {
		return t.BaseSHA, nil
	}
	if sha, ok, err := repo.Resolve(ctx, "refs/heads/"+branch); err != nil || ok {
		return sha, err
	}
	sha, _, err := s.currentBase(ctx, "worktree_setup", repo, base, sync)
	return sha, err
}

// branchName is the branch of a run's worktree: <prefix>/<task>-<run> for
// one task, <prefix>/bundle-<hash of the ids>-<run> for several. The run
// makes it unique: a task shipped again gets a branch of its own.
func branchName(prefix string, ids []string, runID string) string {
	if len(ids) == 1 {
		return prefix + "/" + ids[0] + "-" + runID
	}
	sorted := slices.Sorted(slices.Values(ids))
	sum := sha256.Sum256([]byte(strings.Join(sorted, ",")))
	return prefix + "/bundle-" + hex.EncodeToString(sum[:4]) + "-" + runID
}

// commitInput is git_commit's input.
type commitInput struct {
	taskIDsInput
	CompletedTaskIDs []string `json:"completed_task_ids"`
	JobRunID         string   `json:"job_run_id"`
	WorkspacePath    string   `json:"workspace_path"`
	BaseSHA          string   `json:"base_sha"`
}

// gitCommit commits what the run's worktree holds, with a message that
// names the tasks (subject, and an Orbit-Task trailer each). Nothing to
// commit is no failure: a commit an earlier call made is found, and a
// bundle that changed nothing says so (skipped_no_diff_expected). A task
// Groundhog implemented gets its checkpoints' summaries as its execution
// summary when it has none.
func (s *Service) gitCommit(ctx context.Context, call *activity.ActionCall) (any, error) {
	const action = "git_commit"
	var in commitInput
	if err := decodeInput(action, call.Input, &in); err != nil {
		return nil, err
	}
	if in.WorkspacePath == "" {
		return nil, activity.Failure(events.KindValidation, false, "%s: input.workspace_path is required", action)
	}
	run := in.JobRunID
	if run == "" {
		run = call.RunID
	}
	in.TaskIDs = append(in.TaskIDs, in.CompletedTaskIDs...)
	tasks, err := s.runTasks(ctx, action, in.taskIDsInput, run)
	if err != nil {
		return nil, err
	}
	wt, err := s.open(in.WorkspacePath)
	if err != nil {
		return nil, failf("%s: %v", action, err)
	}
	main, err := s.mainOf(ctx, wt.Dir)
	if err != nil {
		return nil, err
	}
	defer s.lockRepo(main.Dir)()
	head, err := wt.HeadSHA(ctx)
	if err != nil {
		return nil, err
	}
	if in.BaseSHA != "" {
		if ok, err := wt.IsAncestor(ctx, in.BaseSHA, head); err != nil {
			return nil, err
		} else if !ok {
			return nil, failf("%s: the worktree %s is at %s, which does not descend from the base %s it was made at", action, wt.Dir, short(head), short(in.BaseSHA))
		}
	}
	sha, committed, err := wt.CommitAll(ctx, commitMessage(tasks, run))
	if err != nil {
		return nil, failf("%s: %v", action, err)
	}
	decision := "committed"
	if !committed {
		decision = "nothing_to_commit"
	}
	out := map[string]any{"phase": "commit", "decision": decision, "commit_sha": sha, "job_run_id": run,
		"committed_task_ids": taskIDs(tasks)}
	if in.BaseSHA != "" {
		files, err := wt.ChangedFiles(ctx, in.BaseSHA, sha)
		if err != nil {
			return nil, err
		}
		out["base_sha"], out["committed_files"] = in.BaseSHA, toAny(files)
		out["committed"], out["skipped_no_diff_expected"] = sha != in.BaseSHA, sha == in.BaseSHA
	}
	for _, t := range tasks {
		if err := s.summaryFromGroundhog(ctx, t, call.RunID); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// runTasks reads the tasks an action names, or, when it names none, the
// tasks the run took (the upstream jobs pass only job_run_id).
func (s *Service) runTasks(ctx context.Context, action string, in taskIDsInput, runID string) ([]*projector.TaskView, error) {
	if ids, err := in.ids(action); err == nil {
		return s.tasksOf(ctx, ids)
	}
	out, err := s.tookBy(ctx, runID)
	if err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, activity.Failure(events.KindValidation, false, "%s: input names no task, and run %s took none", action, runID)
	}
	return out, nil
}

// tookBy returns the tasks a shipping run took (worktree_setup), in the
// order of the views.
func (s *Service) tookBy(ctx context.Context, runID string) ([]*projector.TaskView, error) {
	all, err := s.tasks(ctx)
	if err != nil {
		return nil, err
	}
	var out []*projector.TaskView
	for i := range all {
		if hasRun(&all[i], runID, projector.TaskRunShip) {
			out = append(out, &all[i])
		}
	}
	return out, nil
}

// commitMessage names the tasks: "T-1: <title>" for one, "T-1, T-2: ship
// 2 tasks" for a bundle, each task's title in the body, and an Orbit-Task
// trailer per task and the run's Orbit-Run.
func commitMessage(tasks []*projector.TaskView, runID string) string {
	var b strings.Builder
	ids := taskIDs(tasks)
	if len(tasks) == 1 {
		fmt.Fprintf(&b, "%s: %s\n", tasks[0].ID, oneLine(tasks[0].Title))
	} else {
		fmt.Fprintf(&b, "%s: ship %d tasks\n", strings.Join(ids, ", "), len(tasks))
	}
	b.WriteString("\n")
	for _, t := range tasks {
		if len(tasks) > 1 {
			fmt.Fprintf(&b, "%s: %s\n", t.ID, oneLine(t.Title))
		}
		if t.ExecutionSummary != "" {
			fmt.Fprintf(&b, "%s\n", strings.TrimSpace(t.ExecutionSummary))
		}
	}
	b.WriteString("\n")
	for _, id := range ids {
		fmt.Fprintf(&b, "Orbit-Task: %s\n", id)
	}
	fmt.Fprintf(&b, "Orbit-Run: %s\n", runID)
	return b.String()
}

func oneLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return strings.TrimSpace(s)
}

func taskIDs(tasks []*projector.TaskView) []string {
	ids := make([]string, len(tasks))
	for i, t := range tasks {
		ids[i] = t.ID
	}
	return ids
}

// summaryFromGroundhog records, for a task Groundhog implemented and whose
// execution summary is empty, the summaries of its committed checkpoints:
// what the agent said of each, verified.
func (s *Service) summaryFromGroundhog(ctx context.Context, t *projector.TaskView, runID string) error {
	if t.Plan == "" || meaningfulSummary(t.ExecutionSummary) {
		return nil
	}
	evs, err := s.cfg.Log.Read(ctx, events.FollowOptions{Filters: []string{events.EventSubject(events.AggregateTask, t.ID, events.GroundhogCommitted)}})
	if err != nil {
		return err
	}
	var lines []string
	for _, ev := range evs {
		var d events.GroundhogCommittedData
		if err := ev.Decode(&d); err != nil {
			return err
		}
		lines = append(lines, d.Checkpoint+": "+oneLine(d.Summary))
	}
	if len(lines) == 0 {
		return nil
	}
	summary := "Groundhog committed, each checkpoint verified:\n" + strings.Join(lines, "\n")
	_, err = s.appendTask(ctx, t.ID, events.DecisionID(events.TaskUpdated, t.ID, runID, "groundhog-summary"), events.TaskUpdated,
		events.TaskUpdatedData{ExecutionSummary: &summary, By: "run:" + runID, RunID: runID})
	return err
}

// syncInput is sync_base's input.
type syncInput struct {
	baseInput
	WorkspacePath string `json:"workspace_path"`
}

// syncBase rebases the run's branch onto the base as it is now (origin's,
// freshly fetched, or the local one). A conflict stops it: the rebase is
// aborted, the worktree left clean on its branch, and the failure names
// the files. A branch on its base already is left as it is.
func (s *Service) syncBase(ctx context.Context, call *activity.ActionCall) (any, error) {
	const action = "sync_base"
	var in syncInput
	if err := decodeInput(action, call.Input, &in); err != nil {
		return nil, err
	}
	base, sync, err := in.parse(action)
	if err != nil {
		return nil, err
	}
	wt, main, branch, unlock, err := s.onBranch(ctx, action, in.WorkspacePath)
	if err != nil {
		return nil, err
	}
	defer unlock()
	onto, baseRef, err := s.currentBase(ctx, action, main, base, sync)
	if err != nil {
		return nil, err
	}
	before, err := wt.HeadSHA(ctx)
	if err != nil {
		return nil, err
	}
	after, err := wt.Rebase(ctx, onto)
	if err != nil {
		if errors.Is(err, gitops.ErrConflict) || errors.Is(err, gitops.ErrDirty) {
			return nil, failf("%s: %v", action, err)
		}
		return nil, err
	}
	decision := "rebased"
	if after == before {
		decision = "up_to_date"
	}
	remote, err := s.remoteHead(ctx, main, branch)
	if err != nil {
		return nil, err
	}
	return map[string]any{"phase": "sync", "decision": decision, "head": branch, "head_sha": after, "head_sha_before": before,
		"base": base, "base_ref": baseRef, "base_sha": onto, "rewritten": after != before, "remote_sha_before": remote}, nil
}

// remoteHead returns where origin has branch now, "" when it has no such
// branch: the exact lease a push of the rewritten branch takes.
func (s *Service) remoteHead(ctx context.Context, repo *gitops.Repo, branch string) (string, error) {
	sha, _, err := repo.RemoteBranch(ctx, s.cfg.Remote, branch)
	if err != nil {
		return "", retryf("asking %s for %s: %v", s.cfg.Remote, branch, err)
	}
	return sha, nil
}

// currentBase returns the base's commit now, and its ref: origin/<base>
// freshly fetched, or the local branch. Its failures name the action.
func (s *Service) currentBase(ctx context.Context, action string, repo *gitops.Repo, base string, sync baseSync) (string, string, error) {
	if sync == syncRemote {
		sha, err := repo.Fetch(ctx, s.cfg.Remote, base)
		if err != nil {
			return "", "", retryf("%s: fetching %s from %s: %v", action, base, s.cfg.Remote, err)
		}
		return sha, s.baseRef(base, sync), nil
	}
	sha, err := repo.BranchSHA(ctx, base)
	if err != nil {
		return "", "", failf("%s: the local base %s: %v", action, base, err)
	}
	return sha, base, nil
}

// baseRef is the ref a run's base is read from: origin/<base>, or the
// local branch.
func (s *Service) baseRef(base string, sync baseSync) string {
	if sync == syncRemote {
		return s.cfg.Remote + "/" + base
	}
	return base
}

// mergeInput is git_merge's input.
type mergeInput struct {
	baseInput
	WorkspacePath string `json:"workspace_path"`
	Strategy      string `json:"strategy"`
}

// mergeTries bounds how often git_merge rebases onto a base that moved
// while it worked.
const mergeTries = 3

// gitMerge fast-forwards the base branch of the repository to the run's
// branch. The run's branch is rebased onto the base first when the base
// has moved on (another run merged); a conflict stops it with the files
// named. The checkout where the base is checked out moves with it, and
// must have no change to tracked files: a person's uncommitted work is
// never touched, and the refusal names the checkout and the files. With
// base_sync remote the local base must hold nothing origin lacks (the
// refusal names both). A merge that happened is found: a second call
// reports it and changes nothing.
func (s *Service) gitMerge(ctx context.Context, call *activity.ActionCall) (any, error) {
	const action = "git_merge"
	var in mergeInput
	if err := decodeInput(action, call.Input, &in); err != nil {
		return nil, err
	}
	if in.Strategy != "" && in.Strategy != "fast_forward" {
		return nil, activity.Failure(events.KindValidation, false, "%s: strategy %q: only fast_forward merges locally", action, in.Strategy)
	}
	base, sync, err := in.parse(action)
	if err != nil {
		return nil, err
	}
	wt, main, branch, unlock, err := s.onBranch(ctx, action, in.WorkspacePath)
	if err != nil {
		return nil, err
	}
	defer unlock()
	if dirty, err := wt.DirtyTracked(ctx); err != nil {
		return nil, err
	} else if len(dirty) > 0 {
		return nil, failf("%s: the worktree %s has uncommitted changes to %s", action, wt.Dir, strings.Join(dirty, ", "))
	}
	if sync == syncRemote {
		if err := s.catchUpWithRemote(ctx, main, base); err != nil {
			return nil, err
		}
	}
	var before string
	for try := 1; ; try++ {
		head, err := wt.HeadSHA(ctx)
		if err != nil {
			return nil, err
		}
		cur, err := main.BranchSHA(ctx, base)
		if err != nil {
			return nil, failf("%s: the base %s: %v", action, base, err)
		}
		if before == "" {
			before = cur
		}
		if merged, err := main.IsAncestor(ctx, head, cur); err != nil {
			return nil, err
		} else if merged {
			return mergeOutput(base, branch, before, cur, head, try == 1 && before == cur), nil
		}
		if _, err := wt.Rebase(ctx, cur); err != nil {
			if errors.Is(err, gitops.ErrConflict) || errors.Is(err, gitops.ErrDirty) {
				return nil, failf("%s: %s moved on to %s: %v", action, base, short(cur), err)
			}
			return nil, err
		}
		if head, err = wt.HeadSHA(ctx); err != nil {
			return nil, err
		}
		_, err = main.MergeFastForward(ctx, base, head, cur)
		switch {
		case err == nil:
			s.log.Info("merged", "run", call.RunID, "branch", branch, "base", base, "from", short(cur), "to", short(head))
			return mergeOutput(base, branch, before, head, head, false), nil
		case errors.Is(err, gitops.ErrDirty):
			return nil, failf("%s: %v", action, err)
		case errors.Is(err, gitops.ErrBranchMoved) && try < mergeTries:
			continue // someone moved the base meanwhile: rebase onto it again
		case errors.Is(err, gitops.ErrBranchMoved), errors.Is(err, gitops.ErrNotFastForward):
			return nil, retryf("%s: %v", action, err)
		}
		return nil, err
	}
}

func mergeOutput(base, branch, before, after, head string, already bool) map[string]any {
	return map[string]any{"merged": true, "already_merged": already, "base": base, "workspace_branch": branch,
		"base_sha_before": before, "base_sha": after, "head_sha": head}
}

// catchUpWithRemote fetches origin/<base> and fast-forwards the local base
// to it. A local base that holds commits origin lacks is refused, naming
// both: its history is not the published one.
func (s *Service) catchUpWithRemote(ctx context.Context, repo *gitops.Repo, base string) error {
	remote, err := repo.Fetch(ctx, s.cfg.Remote, base)
	if err != nil {
		return retryf("git_merge: fetching %s from %s: %v", base, s.cfg.Remote, err)
	}
	local, err := repo.BranchSHA(ctx, base)
	if err != nil {
		return failf("git_merge: the base %s: %v", base, err)
	}
	if ok, err := repo.IsAncestor(ctx, local, remote); err != nil {
		return err
	} else if !ok {
		return failf("git_merge: the local %s (%s) has commits %s/%s (%s) lacks; push or reconcile them, or merge with base_sync local",
			base, short(local), s.cfg.Remote, base, short(remote))
	}
	if _, err := repo.MergeFastForward(ctx, base, remote, local); err != nil {
		return failf("git_merge: bringing %s up to %s/%s: %v", base, s.cfg.Remote, base, err)
	}
	return nil
}

// pushInput is git_push's input.
type pushInput struct {
	WorkspacePath string `json:"workspace_path"`
	Branch        string `json:"branch"`
	// ExpectedRemoteSHA, when the input has it, is the exact lease: origin's
	// branch must be there ("" or null: must not exist).
	ExpectedRemoteSHA json.RawMessage `json:"expected_remote_sha"`
}

// lease reads expected_remote_sha: the commit, and whether the input gave
// one.
func (in *pushInput) lease() (string, bool, error) {
	if in.ExpectedRemoteSHA == nil {
		return "", false, nil
	}
	var v any
	if err := json.Unmarshal(in.ExpectedRemoteSHA, &v); err != nil {
		return "", false, err
	}
	switch x := v.(type) {
	case nil:
		return "", true, nil
	case string:
		return strings.TrimSpace(x), true, nil
	}
	return "", false, fmt.Errorf("expected_remote_sha is a commit id, not %s", in.ExpectedRemoteSHA)
}

// pushTries bounds how often git_push tries again after the remote moved
// forward under it.
const pushTries = 3

// gitPush pushes a branch of the repository to origin without overwriting
// anything: with an exact lease on where origin's branch is
// (--force-with-lease=refs/heads/<b>:<sha>). The lease is
// expected_remote_sha when given, else origin's branch as it is now,
// which the local branch must descend from (a branch origin has moved
// past, or away from, is refused naming both). A branch origin already
// has at the local commit is not pushed again. The exact lease is how a
// rebased branch is pushed over the version of it origin had before the
// rebase, and nothing else.
func (s *Service) gitPush(ctx context.Context, call *activity.ActionCall) (any, error) {
	const action = "git_push"
	var in pushInput
	if err := decodeInput(action, call.Input, &in); err != nil {
		return nil, err
	}
	if in.WorkspacePath == "" || in.Branch == "" {
		return nil, activity.Failure(events.KindValidation, false, "%s: input.workspace_path and input.branch are required", action)
	}
	lease, exact, err := in.lease()
	if err != nil {
		return nil, activity.Failure(events.KindValidation, false, "%s: %v", action, err)
	}
	main, err := s.mainOf(ctx, in.WorkspacePath)
	if err != nil {
		return nil, failf("%s: %v", action, err)
	}
	defer s.lockRepo(main.Dir)()
	local, err := main.BranchSHA(ctx, in.Branch)
	if err != nil {
		return nil, failf("%s: %v", action, err)
	}
	out := map[string]any{"phase": "push", "branch": in.Branch, "local_sha": local, "force_with_lease": true}
	for try := 1; ; try++ {
		remote, exists, err := main.RemoteBranch(ctx, s.cfg.Remote, in.Branch)
		if err != nil {
			return nil, retryf("%s: %v", action, err)
		}
		if try == 1 {
			out["remote_sha_before"] = remote
		}
		if exists && remote == local {
			out["decision"] = "already_pushed"
			return out, nil
		}
		expect := remote
		if exact {
			expect = lease
		} else if exists {
			fetched, err := main.Fetch(ctx, s.cfg.Remote, in.Branch)
			if err != nil {
				return nil, retryf("%s: %v", action, err)
			}
			if contained, err := main.IsAncestor(ctx, local, fetched); err != nil {
				return nil, err
			} else if contained {
				out["decision"] = "already_pushed"
				return out, nil
			}
			if ok, err := main.IsAncestor(ctx, fetched, local); err != nil {
				return nil, err
			} else if !ok {
				return nil, failf("%s: %s/%s (%s) has commits %s (%s) lacks; nothing was pushed", action, s.cfg.Remote, in.Branch, short(fetched), in.Branch, short(local))
			}
			expect = fetched
		}
		err = main.PushLease(ctx, s.cfg.Remote, local, in.Branch, expect)
		switch {
		case err == nil:
			s.log.Info("pushed", "run", call.RunID, "branch", in.Branch, "remote", s.cfg.Remote, "from", short(expect), "to", short(local))
			out["decision"] = "pushed"
			return out, nil
		case errors.Is(err, gitops.ErrBranchMoved) && !exact && try < pushTries:
			continue
		case errors.Is(err, gitops.ErrBranchMoved):
			return nil, failf("%s: %v", action, err)
		}
		return nil, retryf("%s: %v", action, err)
	}
}

// implementerInput is task_implementer's input.
type implementerInput struct {
	TaskID string `json:"task_id"`
}

// taskImplementer says who implements a task: Groundhog when it has a
// checkpoint plan, an agent loop otherwise. Its output routes the
// pipeline's implement steps.
func (s *Service) taskImplementer(ctx context.Context, call *activity.ActionCall) (any, error) {
	var in implementerInput
	if err := decodeInput("task_implementer", call.Input, &in); err != nil {
		return nil, err
	}
	tasks, err := s.tasksOf(ctx, []string{in.TaskID})
	if err != nil {
		return nil, err
	}
	implementer := "agent"
	if tasks[0].Plan != "" {
		implementer = "groundhog"
	}
	return map[string]any{"task_id": in.TaskID, "implementer": implementer}, nil
}

// short is a commit id cut for a message.
func short(sha string) string {
	if len(sha) > 12 {
		return sha[:12]
	}
	return sha
}

func toAny(list []string) []any {
	out := make([]any, len(list))
	for i, s := range list {
		out[i] = s
	}
	return out
}

// onBranch opens the run's worktree at path and the repository it belongs
// to, takes the repository's lock (unlock lets it go) and reads the
// worktree's branch: the start of every action that moves the branch.
func (s *Service) onBranch(ctx context.Context, action, path string) (wt, main *gitops.Repo, branch string, unlock func(), err error) {
	if path == "" {
		return nil, nil, "", nil, activity.Failure(events.KindValidation, false, "%s: input.workspace_path is required", action)
	}
	if wt, err = s.open(path); err != nil {
		return nil, nil, "", nil, failf("%s: %v", action, err)
	}
	if main, err = s.mainOf(ctx, wt.Dir); err != nil {
		return nil, nil, "", nil, err
	}
	unlock = s.lockRepo(main.Dir)
	if branch, err = wt.CurrentBranch(ctx); err != nil {
		unlock()
		return nil, nil, "", nil, failf("%s: %v", action, err)
	}
	return wt, main, branch, unlock, nil
}
