package shipping

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/orbitrun/orbit/activity"
	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/projector"
)

// updateTaskInput is update_task's input.
type updateTaskInput struct {
	TaskID string `json:"task_id"`
	Status string `json:"status"`
	Note   string `json:"note"`
}

// updateTask moves a task to a status, once: a task already there is left
// as it is, and the move's event id derives from the task, the run, the
// step and the status. A pipeline may move a task anywhere its lifecycle
// allows (never out of done, never into archived).
func (s *Service) updateTask(ctx context.Context, call *activity.ActionCall) (any, error) {
	const action = "update_task"
	var in updateTaskInput
	if err := decodeInput(action, call.Input, &in); err != nil {
		return nil, err
	}
	tasks, err := s.tasksOf(ctx, []string{in.TaskID})
	if err != nil {
		return nil, err
	}
	t := tasks[0]
	out := map[string]any{"task_id": t.ID, "status": in.Status, "changed": false}
	if in.Status == "" || t.Status == in.Status {
		out["status"] = t.Status
		return out, nil
	}
	if err := checkTransition(t.ID, t.Status, in.Status, byWorkflow); err != nil {
		return nil, failf("%s: %v", action, err)
	}
	note := in.Note
	if note == "" {
		note = "update_task → " + in.Status
	}
	id := events.DecisionID(events.TaskStatusChanged, t.ID, call.RunID, call.StepKey, in.Status)
	if _, err := s.setStatus(ctx, t, id, in.Status, "run:"+call.RunID, note, call.RunID); err != nil {
		return nil, err
	}
	out["changed"] = true
	return out, nil
}

// listBacklogInput is list_backlog_tasks's input.
type listBacklogInput struct {
	MaxTasks   int      `json:"max_tasks"`
	MaxBundles int      `json:"max_bundles"`
	TaskIDs    []string `json:"task_ids"`
}

// Exclusion reasons of list_backlog_tasks, in the upstream system's words.
const reasonLockConflict = "context_lock_conflict"

// listBacklog lists the tasks an auto run may ship, ordered critical →
// high → medium → low (no priority: medium), then oldest first, then by
// id, at most max_tasks (default 50, at most 500) and max_bundles, as
// singleton bundles.
// Without task_ids these are the backlog's tasks whose dependencies are
// done; one whose context files overlap files a live run holds is left
// out and reported in excluded, with each conflict. Explicit task_ids are
// taken as they are: no filter, no excluded.
func (s *Service) listBacklog(ctx context.Context, call *activity.ActionCall) (any, error) {
	const action = "list_backlog_tasks"
	var in listBacklogInput
	if err := decodeInput(action, call.Input, &in); err != nil {
		return nil, err
	}
	max := in.MaxTasks
	if max <= 0 {
		max = 50
	}
	max = min(max, 500)
	if in.MaxBundles > 0 {
		max = min(max, in.MaxBundles)
	}
	out := map[string]any{}
	var chosen []*projector.TaskView
	if len(in.TaskIDs) > 0 {
		tasks, err := s.tasksOf(ctx, in.TaskIDs)
		if err != nil {
			return nil, err
		}
		chosen = tasks
	} else {
		all, err := s.tasks(ctx)
		if err != nil {
			return nil, err
		}
		held, err := s.heldFiles(ctx)
		if err != nil {
			return nil, err
		}
		status := map[string]string{}
		for _, t := range all {
			status[t.ID] = events.TaskStatusMeaning(t.Status)
		}
		excluded := []any{}
		for i := range all {
			t := &all[i]
			if status[t.ID] != events.TaskBacklog || !depsDone(t, status) {
				continue
			}
			if conflicts := overlapping(t, held); len(conflicts) > 0 {
				excluded = append(excluded, map[string]any{"id": t.ID, "reason": reasonLockConflict, "conflicts": conflicts})
				continue
			}
			chosen = append(chosen, t)
		}
		sortBacklog(chosen)
		out["excluded"] = excluded
	}
	if len(chosen) > max {
		chosen = chosen[:max]
	}
	ids, tasks, bundles := []any{}, []any{}, []any{}
	for _, t := range chosen {
		ids = append(ids, t.ID)
		bundles = append(bundles, []any{t.ID})
		tasks = append(tasks, map[string]any{"id": t.ID, "title": t.Title, "type": t.Type, "priority": t.Priority,
			"context_files": toAny(t.ContextFiles)})
	}
	out["task_count"], out["task_ids"], out["tasks"], out["bundles"] = len(chosen), ids, tasks, bundles
	return out, nil
}

// depsDone reports whether every dependency of a task is done.
func depsDone(t *projector.TaskView, status map[string]string) bool {
	for _, d := range t.Dependencies {
		if status[d] != events.TaskDone {
			return false
		}
	}
	return true
}

var priorityRank = map[string]int{"critical": 0, "high": 1, "": 2, "medium": 2, "low": 3}

func sortBacklog(tasks []*projector.TaskView) {
	slices.SortStableFunc(tasks, func(a, b *projector.TaskView) int {
		return cmp.Or(cmp.Compare(priorityRank[a.Priority], priorityRank[b.Priority]),
			compareTimes(a, b), compareIDs(a.ID, b.ID))
	})
}

func compareTimes(a, b *projector.TaskView) int {
	if a.CreatedAt == nil || b.CreatedAt == nil {
		return 0
	}
	return a.CreatedAt.Compare(*b.CreatedAt)
}

// compareIDs orders T-2 before T-10.
func compareIDs(a, b string) int {
	return cmp.Or(cmp.Compare(len(a), len(b)), strings.Compare(a, b))
}

// heldFile is a file a live run holds, and the tasks it holds it for.
type heldFile struct {
	resource string // files:<glob>
	file     string
	tasks    []string // the tasks the same run holds (its bundle), else the run
}

// heldFiles returns the files live runs hold, each with the tasks of the
// run that holds it.
func (s *Service) heldFiles(ctx context.Context) ([]heldFile, error) {
	live, err := s.locks.Live(ctx)
	if err != nil {
		return nil, err
	}
	tasksOf := map[string][]string{}
	for _, h := range live {
		if id, ok := strings.CutPrefix(h.Resource, activity.TaskResource("")); ok {
			tasksOf[h.Owner] = append(tasksOf[h.Owner], id)
		}
	}
	var out []heldFile
	for _, h := range live {
		if f, ok := strings.CutPrefix(h.Resource, activity.FilesResource("")); ok {
			holders := tasksOf[h.Owner]
			if len(holders) == 0 {
				holders = []string{"run " + h.Owner}
			}
			out = append(out, heldFile{resource: h.Resource, file: f, tasks: holders})
		}
	}
	return out, nil
}

// overlapping returns a task's conflicts with held files:
// {requested_file, locking_task_id} each.
func overlapping(t *projector.TaskView, held []heldFile) []any {
	var out []any
	for _, f := range t.ContextFiles {
		for _, h := range held {
			if !activity.Overlaps(activity.FilesResource(f), h.resource) {
				continue
			}
			for _, by := range h.tasks {
				out = append(out, map[string]any{"requested_file": f, "locking_task_id": by})
			}
		}
	}
	return out
}

// validateBundlesInput is validate_bundles's input.
type validateBundlesInput struct {
	Bundles       [][]string `json:"bundles"`
	MaxBundleSize int        `json:"max_bundle_size"`
	KnownTaskIDs  []string   `json:"known_task_ids"`
}

// validateBundles passes bundles on unchanged when none is empty or larger
// than max_bundle_size, no task is in two, and every task is known; else
// it fails naming what is wrong, so that a misgrouped backlog never ships.
func validateBundles(_ context.Context, call *activity.ActionCall) (any, error) {
	const action = "validate_bundles"
	var in validateBundlesInput
	if err := decodeInput(action, call.Input, &in); err != nil {
		return nil, err
	}
	seen := map[string]int{}
	var problems []string
	for i, b := range in.Bundles {
		if len(b) == 0 {
			problems = append(problems, fmt.Sprintf("bundle %d is empty", i+1))
		}
		if in.MaxBundleSize > 0 && len(b) > in.MaxBundleSize {
			problems = append(problems, fmt.Sprintf("bundle %d has %d tasks, more than %d", i+1, len(b), in.MaxBundleSize))
		}
		for _, id := range b {
			if j, dup := seen[id]; dup {
				problems = append(problems, fmt.Sprintf("%s is in bundles %d and %d", id, j, i+1))
			}
			seen[id] = i + 1
			if !slices.Contains(in.KnownTaskIDs, id) {
				problems = append(problems, fmt.Sprintf("%s (bundle %d) is not a listed task", id, i+1))
			}
		}
	}
	if len(problems) > 0 {
		return nil, activity.Failure(events.KindValidation, false, "%s: %s", action, strings.Join(problems, "; "))
	}
	bundles := make([]any, len(in.Bundles))
	for i, b := range in.Bundles {
		bundles[i] = toAny(b)
	}
	return map[string]any{"bundles": bundles, "bundle_count": len(in.Bundles)}, nil
}
