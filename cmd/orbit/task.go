package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/orbitrun/orbit/activity"
	"github.com/orbitrun/orbit/assets"
	"github.com/orbitrun/orbit/engine"
	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/gitops"
	"github.com/orbitrun/orbit/projector"
)

func (a *app) taskCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "task", Short: "Add, change and inspect tasks"}
	cmd.AddCommand(a.taskAddCommand(), a.taskListCommand(), a.taskShowCommand(), a.taskUpdateCommand(),
		a.taskStartCommand(), a.taskArchiveCommand(), a.taskCreateCommand(), a.taskPlanCommand())
	return cmd
}

// readPlan reads and validates the plan file given with flag.
func readPlan(flag, path string) ([]byte, *assets.Plan, error) {
	if path == "" {
		return nil, nil, usageErr("%s FILE is required", flag)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, usageErr("%v", err)
	}
	plan, err := assets.ParsePlan(path, data)
	if err != nil {
		return nil, nil, err
	}
	return data, plan, nil
}

// workspaceRepo opens the repository a task changes: --workspace, else the
// git repository that holds the project root.
func (a *app) workspaceRepo(workspace string) (*gitops.Repo, error) {
	if workspace == "" {
		root, err := a.project()
		if err != nil {
			return nil, err
		}
		repo, err := gitops.Open(root)
		if err != nil {
			return nil, usageErr("the project root %s is not in a git repository (%v); name the task's repository with --workspace", root, err)
		}
		return repo, nil
	}
	abs, err := filepath.Abs(workspace)
	if err != nil {
		return nil, err
	}
	repo, err := gitops.Open(abs)
	if err != nil {
		return nil, usageErr("--workspace %s: %v", workspace, err)
	}
	return repo, nil
}

// currentTaskBranch is the branch a Groundhog task commits on when none is
// named: the workspace's current branch, which must have a commit, since
// every attempt starts from the task branch's last commit.
func currentTaskBranch(ctx context.Context, repo *gitops.Repo) (string, error) {
	branch, err := repo.CurrentBranch(ctx)
	if err != nil {
		return "", usageErr("--workspace %s: %v; name the task branch with --branch", repo.Dir, err)
	}
	if _, err := repo.BranchSHA(ctx, branch); errors.Is(err, gitops.ErrBranchNotFound) {
		return "", usageErr("--workspace %s: branch %s has no commit yet, and every attempt starts from the task branch's last commit: commit first, or name another branch with --branch", repo.Dir, branch)
	} else if err != nil {
		return "", usageErr("--workspace %s: %v", repo.Dir, err)
	}
	return branch, nil
}

func (a *app) taskAddCommand() *cobra.Command {
	var t engine.TaskCreate
	var planFile, checkpointPlan, workspace string
	cmd := &cobra.Command{
		Use:   "add --title T [--description D] [--acceptance A]... [--context-file F]... [--plan-file P] [--workspace DIR] [--status backlog]",
		Short: "Add a task to the project's backlog, or propose one",
		Long: `Add a task: what to do (title, description, acceptance criteria), the files it
is expected to touch (context files, which a shipping gate reserves), its
plan, and the repository it changes (default: the git repository that holds
the project root). It starts proposed unless --status says backlog, someday
or friction; orbit run auto ships the backlog. A task with a checkpoint plan
(--checkpoint-plan) is implemented by Groundhog, one verified checkpoint at
a time. Prints the new task's id (the task with --json).`,
		Args: cobra.NoArgs,
		RunE: a.withEngine(func(ctx context.Context, l *events.Log, _ []string) error {
			if strings.TrimSpace(t.Title) == "" {
				return usageErr("--title is required")
			}
			repo, err := a.workspaceRepo(workspace)
			if err != nil {
				return err
			}
			t.Workspace = repo.Dir
			if planFile != "" {
				data, err := os.ReadFile(planFile)
				if err != nil {
					return usageErr("--plan-file: %v", err)
				}
				t.PlanText = string(data)
			}
			if checkpointPlan != "" {
				data, _, err := readPlan("--checkpoint-plan", checkpointPlan)
				if err != nil {
					return err
				}
				t.Plan = string(data)
				if t.Branch == "" {
					if t.Branch, err = currentTaskBranch(ctx, repo); err != nil {
						return err
					}
				}
			}
			t.By = requester()
			return a.created(ctx, l, t)
		}),
	}
	f := cmd.Flags()
	f.StringVar(&t.Title, "title", "", "what the task is (required)")
	f.StringVar(&t.Description, "description", "", "what to do, in more words")
	f.StringArrayVar(&t.AcceptanceCriteria, "acceptance", nil, "an acceptance criterion (repeatable)")
	f.StringArrayVar(&t.ContextFiles, "context-file", nil, "a file or glob, relative to the repository, the task is expected to touch (repeatable)")
	f.StringArrayVar(&t.Dependencies, "depends-on", nil, "a task that must be done first (repeatable)")
	f.StringVar(&planFile, "plan-file", "", "a file holding the task's plan, in prose")
	f.StringVar(&checkpointPlan, "checkpoint-plan", "", "a checkpoint plan (YAML) for Groundhog")
	f.StringVar(&workspace, "workspace", "", "the git repository the task changes (default: the one holding the project root)")
	f.StringVar(&t.Branch, "branch", "", "with --checkpoint-plan, the branch Groundhog commits on outside a shipping run (default: the repository's current branch)")
	f.StringVar(&t.Status, "status", "", "proposed (default), backlog, someday or friction")
	f.StringVar(&t.Priority, "priority", "", "low, medium, high or critical")
	f.StringVar(&t.Type, "type", "", "what kind of work: feature, bug, chore, …")
	return cmd
}

// created records a new task and prints its id, or the task with --json.
func (a *app) created(ctx context.Context, l *events.Log, t engine.TaskCreate) error {
	var created engine.TaskCreated
	if err := request(ctx, l, engine.EndpointTaskCreate, t, &created); err != nil {
		return err
	}
	if a.json {
		view, err := getTask(ctx, l, created.TaskID, created.Seq)
		if err != nil {
			return err
		}
		return a.printJSON(view)
	}
	a.printf("%s\n", created.TaskID)
	return nil
}

func (a *app) taskCreateCommand() *cobra.Command {
	var title, planFile, workspace, branch string
	cmd := &cobra.Command{
		Use:   "create --title T --plan FILE --workspace DIR [--branch B]",
		Short: "Create a Groundhog task: a checkpoint plan to run on a git workspace",
		Long: `Create a task from a checkpoint plan (YAML) for a git workspace, in the
backlog. The task branch defaults to the workspace's current branch. Prints
the task id.`,
		Args: cobra.NoArgs,
		RunE: a.withEngine(func(ctx context.Context, l *events.Log, _ []string) error {
			if strings.TrimSpace(title) == "" {
				return usageErr("--title is required")
			}
			data, _, err := readPlan("--plan", planFile)
			if err != nil {
				return err
			}
			if workspace == "" {
				return usageErr("--workspace DIR is required")
			}
			repo, err := a.workspaceRepo(workspace)
			if err != nil {
				return err
			}
			if branch == "" {
				if branch, err = currentTaskBranch(ctx, repo); err != nil {
					return err
				}
			} else if _, err := repo.BranchSHA(ctx, branch); err != nil {
				return usageErr("--branch %s: %v", branch, err)
			}
			return a.created(ctx, l, engine.TaskCreate{Title: title, Workspace: repo.Dir, Branch: branch, Plan: string(data),
				Status: events.TaskBacklog, By: requester()})
		}),
	}
	cmd.Flags().StringVar(&title, "title", "", "what the task is")
	cmd.Flags().StringVar(&planFile, "plan", "", "the checkpoint plan (YAML)")
	cmd.Flags().StringVar(&workspace, "workspace", "", "the git work tree the task changes")
	cmd.Flags().StringVar(&branch, "branch", "", "the task branch (default: the workspace's current branch)")
	return cmd
}

func getTask(ctx context.Context, l *events.Log, id string, minSeq uint64) (*projector.TaskView, error) {
	var view projector.TaskView
	if err := request(ctx, l, engine.EndpointTask, engine.TaskQuery{TaskID: id, MinSeq: minSeq}, &view); err != nil {
		return nil, err
	}
	return &view, nil
}

// taskRun is a run of a task as task show prints it: the view's record
// with the run's job and state.
type taskRun struct {
	projector.TaskRun
	Job   string `json:"job,omitempty"`
	State string `json:"state,omitempty"`
}

// taskShown is what task show --json prints: the task's view, its runs
// with their state.
type taskShown struct {
	*projector.TaskView
	Runs []taskRun `json:"runs"`
}

func (a *app) taskShowCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "show <task_id>",
		Short: "Show a task: its record, its runs and the history of its status",
		Args:  exactArgs(1, "a task id"),
		RunE: a.withEngine(func(ctx context.Context, l *events.Log, args []string) error {
			last, err := l.LastSeq(ctx)
			if err != nil {
				return &exitError{code: exitUnavailable, err: err}
			}
			t, err := getTask(ctx, l, args[0], last)
			if err != nil {
				return err
			}
			shown := taskShown{TaskView: t, Runs: []taskRun{}}
			for _, r := range t.Runs {
				tr := taskRun{TaskRun: r}
				var run projector.RunView
				if err := request(ctx, l, engine.EndpointRun, engine.RunQuery{RunID: r.RunID, MinSeq: last}, &run); err == nil {
					tr.Job, tr.State = run.Job, run.State
				} else if !errors.Is(err, events.ErrNotFound) {
					return err
				}
				shown.Runs = append(shown.Runs, tr)
			}
			if a.json {
				return a.printJSON(shown)
			}
			a.showTask(&shown)
			return nil
		}),
	}
}

func (a *app) showTask(s *taskShown) {
	t := s.TaskView
	field := func(name, value string) {
		if value != "" {
			a.printf("%-13s %s\n", name+":", value)
		}
	}
	field("Task", t.ID)
	field("Title", t.Title)
	if t.Status == events.TaskHeld && t.StatusReason != "" {
		field("Status", t.Status+": "+t.StatusReason)
	} else {
		field("Status", t.Status)
		field("Reason", t.StatusReason)
	}
	field("Priority", t.Priority)
	field("Type", t.Type)
	field("Workspace", t.Workspace)
	field("Branch", t.Branch)
	field("Worktree", t.Worktree)
	field("Depends on", strings.Join(t.Dependencies, ", "))
	if t.PlanVersion > 0 {
		field("Plan version", fmt.Sprint(t.PlanVersion))
	}
	if t.Description != "" {
		a.printf("\n%s\n", strings.TrimSpace(t.Description))
	}
	list := func(title string, items []string) {
		if len(items) > 0 {
			a.printf("\n%s:\n", title)
			for _, it := range items {
				a.printf("  - %s\n", it)
			}
		}
	}
	list("Acceptance criteria", t.AcceptanceCriteria)
	list("Context files", t.ContextFiles)
	if t.PlanText != "" {
		a.printf("\nPlan:\n%s\n", indent(strings.TrimSpace(t.PlanText)))
	}
	if plan, err := assets.ParsePlan(t.ID, []byte(t.Plan)); err == nil && t.Plan != "" {
		a.printf("\nCheckpoints:\n")
		for i, cp := range plan.Checkpoints {
			a.printf("  %d. %s: %s\n", i+1, cp.ID, firstLine(cp.Spec))
		}
	}
	if t.ExecutionSummary != "" {
		a.printf("\nExecution summary:\n%s\n", indent(strings.TrimSpace(t.ExecutionSummary)))
	}
	if len(s.Runs) > 0 {
		a.printf("\nRuns:\n")
		for _, r := range s.Runs {
			a.printf("  %s  %-9s  %-20s %s\n", r.RunID, r.Kind, r.Job, r.State)
		}
	}
	if len(t.History) > 0 {
		a.printf("\nHistory:\n")
		for _, h := range t.History {
			move := h.To
			if h.From != "" {
				move = h.From + " → " + h.To
			}
			line := fmt.Sprintf("  %s  %s", timestamp(h.At), move)
			if h.By != "" {
				line += "  by " + h.By
			}
			if h.Reason != "" {
				line += ": " + firstLine(h.Reason)
			}
			a.printf("%s\n", line)
		}
	}
}

func indent(s string) string { return "  " + strings.ReplaceAll(s, "\n", "\n  ") }

func (a *app) taskListCommand() *cobra.Command {
	var statuses []string
	cmd := &cobra.Command{
		Use:   "list [--status S]...",
		Short: "List tasks",
		Args:  cobra.NoArgs,
		RunE: a.withEngine(func(ctx context.Context, l *events.Log, _ []string) error {
			last, err := l.LastSeq(ctx)
			if err != nil {
				return &exitError{code: exitUnavailable, err: err}
			}
			var all []projector.TaskView
			if err := request(ctx, l, engine.EndpointTasks, engine.TaskQuery{MinSeq: last}, &all); err != nil {
				return err
			}
			tasks := []projector.TaskView{}
			for _, t := range all {
				if len(statuses) == 0 || slices.Contains(statuses, events.TaskStatusMeaning(t.Status)) {
					tasks = append(tasks, t)
				}
			}
			if a.json {
				return a.printJSON(tasks)
			}
			t := newTable(a.stdout, "TASK", "STATUS", "PRIORITY", "PLAN", "BRANCH", "TITLE")
			for _, task := range tasks {
				plan := "-"
				if task.PlanVersion > 0 {
					plan = fmt.Sprintf("v%d", task.PlanVersion)
				}
				t.row(task.ID, task.Status, or(task.Priority, "-"), plan, or(task.Branch, "-"), task.Title)
			}
			return t.flush()
		}),
	}
	cmd.Flags().StringArrayVar(&statuses, "status", nil, "list only tasks in this status (repeatable)")
	return cmd
}

func or(s, alt string) string {
	if s == "" {
		return alt
	}
	return s
}

func (a *app) taskUpdateCommand() *cobra.Command {
	var (
		c                                      engine.TaskUpdate
		title, description, planFile, priority string
		typ, summary                           string
		acceptance, contextFiles, dependsOn    []string
		clearAcceptance, clearFiles, clearDeps bool
	)
	cmd := &cobra.Command{
		Use:   "update <task_id> [--status S] [--summary TEXT] [--title T] [--description D] [--acceptance A]... [--context-file F]... [--plan-file P]",
		Short: "Change a task's fields, record its execution summary, or move its status",
		Long: `Change a task. A list flag (--acceptance, --context-file, --depends-on)
replaces the whole list. --status moves the task (done is final; archive
with orbit task archive); a task in progress goes to review with an
execution summary. --summary records the execution summary: what was done,
why, how it was checked.

Inside an agent step bound to the task (ORBIT_TASK_TOKEN in the
environment), --summary alone is sent with the step's token, as the agent
identity may: nothing else can be changed from there.`,
		Args: exactArgs(1, "a task id"),
		RunE: func(cmd *cobra.Command, args []string) error {
			flags := cmd.Flags()
			set := func(name string, v string) *string {
				if flags.Changed(name) {
					return &v
				}
				return nil
			}
			setList := func(name string, v []string, clear bool) *[]string {
				if flags.Changed(name) || clear {
					if v == nil {
						v = []string{}
					}
					return &v
				}
				return nil
			}
			c.TaskID = args[0]
			c.Title, c.Description, c.Priority, c.Type = set("title", title), set("description", description), set("priority", priority), set("type", typ)
			c.ExecutionSummary = set("summary", summary)
			c.AcceptanceCriteria = setList("acceptance", acceptance, clearAcceptance)
			c.ContextFiles = setList("context-file", contextFiles, clearFiles)
			c.Dependencies = setList("depends-on", dependsOn, clearDeps)
			if planFile != "" {
				data, err := os.ReadFile(planFile)
				if err != nil {
					return usageErr("--plan-file: %v", err)
				}
				c.PlanText = set("plan-file", string(data))
			}
			if token := os.Getenv(activity.EnvTaskToken); token != "" {
				return a.agentSummary(cmd.Context(), c, token)
			}
			c.By = requester()
			return a.withEngine(func(ctx context.Context, l *events.Log, _ []string) error {
				var w engine.TaskWritten
				if err := request(ctx, l, engine.EndpointTaskUpdate, c, &w); err != nil {
					return err
				}
				return a.written(ctx, l, w, "updated")
			})(cmd, args)
		},
	}
	f := cmd.Flags()
	f.StringVar(&c.Status, "status", "", "move the task: proposed, backlog, in-progress, review, done, blocked, rejected, someday, friction")
	f.StringVar(&c.Reason, "reason", "", "why the status moves, for its history")
	f.StringVar(&summary, "summary", "", "the execution summary: what was done, why, how it was checked")
	f.StringVar(&title, "title", "", "a new title")
	f.StringVar(&description, "description", "", "a new description")
	f.StringArrayVar(&acceptance, "acceptance", nil, "an acceptance criterion (repeatable; replaces the list)")
	f.StringArrayVar(&contextFiles, "context-file", nil, "a context file (repeatable; replaces the list)")
	f.StringArrayVar(&dependsOn, "depends-on", nil, "a dependency (repeatable; replaces the list)")
	f.BoolVar(&clearAcceptance, "clear-acceptance", false, "remove every acceptance criterion")
	f.BoolVar(&clearFiles, "clear-context-files", false, "remove every context file")
	f.BoolVar(&clearDeps, "clear-depends-on", false, "remove every dependency")
	f.StringVar(&planFile, "plan-file", "", "a file holding the task's new plan, in prose")
	f.StringVar(&priority, "priority", "", "low, medium, high or critical")
	f.StringVar(&typ, "type", "", "what kind of work: feature, bug, chore, …")
	return cmd
}

// agentSummary sends an agent's execution summary with its step's token:
// the one change the agent identity may make.
func (a *app) agentSummary(ctx context.Context, c engine.TaskUpdate, token string) error {
	if c.ExecutionSummary == nil || c.Status != "" || c.Title != nil || c.Description != nil || c.PlanText != nil ||
		c.Priority != nil || c.Type != nil || c.AcceptanceCriteria != nil || c.ContextFiles != nil || c.Dependencies != nil {
		return usageErr("inside an agent step (%s is set) orbit task update records --summary and nothing else", activity.EnvTaskToken)
	}
	if id := os.Getenv(activity.EnvTaskID); id != "" && id != c.TaskID {
		return usageErr("this agent step is bound to task %s, not %s", id, c.TaskID)
	}
	l, err := a.connectRunning(ctx)
	if err != nil {
		return err
	}
	defer l.Close()
	var reply engine.SummaryReply
	if err := request(ctx, l, engine.EndpointTaskSummary, engine.SummaryRequest{TaskID: c.TaskID, Token: token, Summary: *c.ExecutionSummary}, &reply); err != nil {
		return err
	}
	if reply.Refused {
		return &exitError{code: exitUnsuccess, err: errors.New(reply.Message)}
	}
	a.printf("%s\n", reply.Message)
	return nil
}

// written prints the outcome of a task write: a line, or the task with
// --json.
func (a *app) written(ctx context.Context, l *events.Log, w engine.TaskWritten, what string) error {
	if a.json {
		view, err := getTask(ctx, l, w.TaskID, w.Seq)
		if err != nil {
			return err
		}
		return a.printJSON(view)
	}
	if w.Seq == 0 {
		what = "unchanged"
	}
	a.printf("%s %s\n", w.TaskID, what)
	return nil
}

func (a *app) taskStartCommand() *cobra.Command {
	return a.taskStatusCommand("start", engine.EndpointTaskStart, "started",
		"Start work on a task: proposed, backlog, someday or blocked go in progress")
}

func (a *app) taskArchiveCommand() *cobra.Command {
	return a.taskStatusCommand("archive", engine.EndpointTaskArchive, "archived",
		"Archive a task (orbit task update --status backlog restores it)")
}

func (a *app) taskStatusCommand(use, endpoint, what, short string) *cobra.Command {
	var reason string
	cmd := &cobra.Command{
		Use:   use + " <task_id> [--reason R]",
		Short: short,
		Args:  exactArgs(1, "a task id"),
		RunE: a.withEngine(func(ctx context.Context, l *events.Log, args []string) error {
			var w engine.TaskWritten
			if err := request(ctx, l, endpoint, engine.TaskStatusRequest{TaskID: args[0], By: requester(), Reason: reason}, &w); err != nil {
				return err
			}
			return a.written(ctx, l, w, what)
		}),
	}
	cmd.Flags().StringVar(&reason, "reason", "", "why, for the task's history")
	return cmd
}

func (a *app) taskPlanCommand() *cobra.Command {
	var planFile string
	cmd := &cobra.Command{
		Use:   "plan <task_id> --file FILE",
		Short: "Replace a task's checkpoint plan with a new version",
		Long: `Record a new version of a task's checkpoint plan. A Groundhog run pinned to
the old version stops before its next attempt (drift) and leaves the
workspace clean.`,
		Args: exactArgs(1, "a task id"),
		RunE: a.withEngine(func(ctx context.Context, l *events.Log, args []string) error {
			data, _, err := readPlan("--file", planFile)
			if err != nil {
				return err
			}
			last, err := l.LastSeq(ctx)
			if err != nil {
				return &exitError{code: exitUnavailable, err: err}
			}
			t, err := getTask(ctx, l, args[0], last)
			if err != nil {
				return err
			}
			version := t.PlanVersion + 1
			var ap engine.PlanChanged
			err = request(ctx, l, engine.EndpointTaskPlan, engine.PlanChange{TaskID: t.ID, Plan: string(data), PlanVersion: version}, &ap)
			if errors.Is(err, events.ErrConflict) {
				return &exitError{code: exitUnsuccess, err: errors.New("the plan was changed at the same time by someone else; run the command again")}
			}
			if err != nil {
				return err
			}
			if a.json {
				view, err := getTask(ctx, l, t.ID, ap.Seq)
				if err != nil {
					return err
				}
				return a.printJSON(view)
			}
			a.printf("%s plan version %d\n", t.ID, version)
			return nil
		}),
	}
	cmd.Flags().StringVar(&planFile, "file", "", "the new plan (YAML)")
	return cmd
}
