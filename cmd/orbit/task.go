package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/orbitrun/orbit/assets"
	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/gitops"
	"github.com/orbitrun/orbit/internal/engine"
	"github.com/orbitrun/orbit/projector"
)

func (a *app) taskCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "task", Short: "Create and inspect Groundhog tasks"}
	cmd.AddCommand(a.taskCreateCommand(), a.taskShowCommand(), a.taskPlanCommand(), a.taskListCommand())
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

func (a *app) taskCreateCommand() *cobra.Command {
	var title, planFile, workspace, branch string
	cmd := &cobra.Command{
		Use:   "create --title T --plan FILE --workspace DIR [--branch B]",
		Short: "Create a task: a checkpoint plan to run on a git workspace",
		Long: `Create a task from a checkpoint plan (YAML) for a git workspace. The task
branch defaults to the workspace's current branch. Prints the task id.`,
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
			abs, err := filepath.Abs(workspace)
			if err != nil {
				return err
			}
			repo, err := gitops.Open(abs)
			if err != nil {
				return usageErr("--workspace %s: %v", workspace, err)
			}
			if branch == "" {
				if branch, err = repo.CurrentBranch(ctx); err != nil {
					return usageErr("--workspace %s: %v; name the task branch with --branch", workspace, err)
				}
			} else if _, err := repo.BranchSHA(ctx, branch); err != nil {
				return usageErr("--branch %s: %v", branch, err)
			}
			var created engine.TaskCreated
			if err := request(ctx, l, engine.EndpointTaskCreate, engine.TaskCreate{Title: title, Workspace: repo.Dir, Branch: branch, Plan: string(data)}, &created); err != nil {
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

func (a *app) taskShowCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "show <task_id>",
		Short: "Show a task",
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
			if a.json {
				return a.printJSON(t)
			}
			field := func(name, value string) { a.printf("%-13s %s\n", name+":", value) }
			field("Task", t.ID)
			field("Title", t.Title)
			status := t.Status
			if t.Status == events.TaskHeld && t.StatusReason != "" {
				status += ": " + t.StatusReason
			}
			field("Status", status)
			field("Workspace", t.Workspace)
			field("Branch", t.Branch)
			field("Plan version", fmt.Sprint(t.PlanVersion))
			if t.LastRunID != "" {
				field("Last run", t.LastRunID)
			}
			if plan, err := assets.ParsePlan(t.ID, []byte(t.Plan)); err == nil {
				a.printf("\n")
				for i, cp := range plan.Checkpoints {
					a.printf("%d. %s: %s\n", i+1, cp.ID, firstLine(cp.Spec))
				}
			}
			return nil
		}),
	}
}

func (a *app) taskListCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "List tasks",
		Args:  cobra.NoArgs,
		RunE: a.withEngine(func(ctx context.Context, l *events.Log, _ []string) error {
			last, err := l.LastSeq(ctx)
			if err != nil {
				return &exitError{code: exitUnavailable, err: err}
			}
			var tasks []projector.TaskView
			if err := request(ctx, l, engine.EndpointTasks, engine.TaskQuery{MinSeq: last}, &tasks); err != nil {
				return err
			}
			if a.json {
				return a.printJSON(tasks)
			}
			t := newTable(a.stdout, "TASK", "STATUS", "PLAN", "BRANCH", "TITLE")
			for _, task := range tasks {
				t.row(task.ID, task.Status, fmt.Sprintf("v%d", task.PlanVersion), task.Branch, task.Title)
			}
			return t.flush()
		}),
	}
}

func (a *app) taskPlanCommand() *cobra.Command {
	var planFile string
	cmd := &cobra.Command{
		Use:   "plan <task_id> --file FILE",
		Short: "Replace a task's plan with a new version",
		Long: `Record a new version of a task's plan. A Groundhog run pinned to the old
version stops before its next attempt (drift) and leaves the workspace clean.`,
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
