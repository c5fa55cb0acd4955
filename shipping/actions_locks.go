package shipping

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/orbitrun/orbit/activity"
	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/executor"
	"github.com/orbitrun/orbit/projector"
)

// reserveInput is reserve_locks's input.
type reserveInput struct {
	taskIDsInput
	TTLSeconds float64 `json:"ttl_seconds"`
}

// maxTTL bounds a reservation's TTL, as the upstream system does. The
// reservation ends with its run anyway; the TTL is the fallback.
const maxTTL = 7200

// reserveLocks reserves a bundle for the run that asks (a gate): each task
// (task:<id>) and each of its context files (files:<path>), all or none.
// Dependencies come first: one that can never be done (archived,
// rejected, or no such task) fails the step at once; one not done yet
// gives reserved false and waiting_on_deps, to wait for. Files another
// live run holds give reserved false and the conflicts. The reservation is
// the run's: its id is the run's, and the engine releases it when the run
// ends, whatever its end.
func (s *Service) reserveLocks(ctx context.Context, call *activity.ActionCall) (any, error) {
	const action = "reserve_locks"
	var in reserveInput
	if err := decodeInput(action, call.Input, &in); err != nil {
		return nil, err
	}
	ids, err := in.ids(action)
	if err != nil {
		return nil, err
	}
	if in.TTLSeconds < 0 || in.TTLSeconds > maxTTL {
		return nil, activity.Failure(events.KindValidation, false, "%s: ttl_seconds is 1 to %d, not %g", action, maxTTL, in.TTLSeconds)
	}
	tasks, err := s.tasksOf(ctx, ids)
	if err != nil {
		return nil, err
	}
	waiting, err := s.waitingOn(ctx, tasks)
	if err != nil {
		return nil, err
	}
	out := map[string]any{"reserved": false, "waiting_on_deps": toAny(waiting), "conflicts": []any{}, "reserved_files": []any{}}
	if len(waiting) > 0 {
		return out, nil
	}
	var resources, files []string
	for _, t := range tasks {
		resources = append(resources, activity.TaskResource(t.ID))
	}
	for _, t := range tasks {
		for _, f := range t.ContextFiles {
			if !slices.Contains(files, f) {
				files = append(files, f)
				resources = append(resources, activity.FilesResource(f))
			}
		}
	}
	ttl := time.Duration(in.TTLSeconds * float64(time.Second))
	conflicts, err := s.locks.Reserve(ctx, call.RunID, call.StepKey, resources, ttl)
	if err != nil {
		return nil, err
	}
	if len(conflicts) > 0 {
		var list []any
		for _, c := range conflicts {
			list = append(list, map[string]any{"file": resourceName(c.Want), "held_by": "reservation", "held_by_id": c.Owner})
		}
		out["conflicts"] = list
		return out, nil
	}
	out["reserved"], out["reservation_id"], out["reserved_files"] = true, call.RunID, toAny(files)
	if ttl > 0 {
		out["expires_at"] = time.Now().UTC().Add(ttl).Format(time.RFC3339)
	}
	return out, nil
}

// resourceName is a reserved resource as a person reads it: a file as
// its path, a task as task:<id>.
func resourceName(res string) string {
	if f, ok := strings.CutPrefix(res, activity.FilesResource("")); ok {
		return f
	}
	return res
}

// waitingOn returns the dependencies of the bundle that are not done yet,
// and fails when one never can be: archived, rejected, or no such task.
func (s *Service) waitingOn(ctx context.Context, tasks []*projector.TaskView) ([]string, error) {
	var waiting, dead []string
	for _, t := range tasks {
		for _, d := range t.Dependencies {
			dep, err := s.task(ctx, d)
			switch {
			case errors.Is(err, events.ErrNotFound):
				dead = append(dead, fmt.Sprintf("%s depends on %s, which does not exist", t.ID, d))
				continue
			case err != nil:
				return nil, err
			}
			switch events.TaskStatusMeaning(dep.Status) {
			case events.TaskDone:
			case events.TaskArchived, events.TaskRejected:
				dead = append(dead, fmt.Sprintf("%s depends on %s, which is %s", t.ID, d, dep.Status))
			default:
				if !slices.Contains(waiting, d) {
					waiting = append(waiting, d)
				}
			}
		}
	}
	if len(dead) > 0 {
		return nil, failf("task.dependencies.unsatisfiable: %s: it can never be done, so waiting would not help", strings.Join(dead, "; "))
	}
	return waiting, nil
}

// releaseInput is release_locks's input.
type releaseInput struct {
	ReservationID string `json:"reservation_id"`
}

// releaseLocks releases a reservation of the run that asks: its id is the
// run's own (a run releases nothing of another). Releasing what is
// released already releases nothing.
func (s *Service) releaseLocks(ctx context.Context, call *activity.ActionCall) (any, error) {
	const action = "release_locks"
	var in releaseInput
	if err := decodeInput(action, call.Input, &in); err != nil {
		return nil, err
	}
	if in.ReservationID != call.RunID {
		return nil, activity.Failure(events.KindValidation, false, "%s: reservation %q is not this run's (%s); a run releases its own", action, in.ReservationID, call.RunID)
	}
	released, err := s.locks.Release(ctx, call.RunID, nil)
	if err != nil {
		return nil, err
	}
	return map[string]any{"released": len(released) > 0, "resources": toAny(released)}, nil
}

// starvationInput is gate_starvation_fail's input.
type starvationInput struct {
	taskIDsInput
	Conflicts      []events.LockConflict `json:"conflicts"`
	WaitingOnDeps  []string              `json:"waiting_on_deps"`
	MaxWaitSeconds float64               `json:"max_wait_seconds"`
}

// gateStarvationFail records gate.starvation (what the gate waited for in
// vain) and fails the run: its bundle never got its files.
func (s *Service) gateStarvationFail(ctx context.Context, call *activity.ActionCall) (any, error) {
	const action = "gate_starvation_fail"
	var in starvationInput
	if err := decodeInput(action, call.Input, &in); err != nil {
		return nil, err
	}
	ids, _ := in.ids(action)
	if err := call.Emit(ctx, events.GateStarvation, events.GateStarvationData{TaskIDs: ids, Conflicts: in.Conflicts,
		WaitingOnDeps: in.WaitingOnDeps, MaxWaitSeconds: int(in.MaxWaitSeconds)}); err != nil {
		return nil, err
	}
	var why []string
	for _, c := range in.Conflicts {
		why = append(why, fmt.Sprintf("%s held by %s %s", c.File, c.HeldBy, c.HeldByID))
	}
	if len(in.WaitingOnDeps) > 0 {
		why = append(why, "dependencies not done: "+strings.Join(in.WaitingOnDeps, ", "))
	}
	if len(why) == 0 {
		why = append(why, "the reservation was never granted")
	}
	return nil, failf("gate starved: tasks %s waited %gs and never got what they need: %s", strings.Join(ids, ", "), in.MaxWaitSeconds, strings.Join(why, "; "))
}

// Admission answers invoke_and_wait's check before a gate dispatches its
// child: tasks in review or done were shipped meanwhile, and the child is
// skipped (the gate releases its reservation and succeeds). Any other
// status goes on; worktree_setup's admission decides the rest.
func (s *Service) Admission(ctx context.Context, taskIDs []string, workflow string) (*executor.Admission, error) {
	adm := &executor.Admission{}
	var done []string
	for _, id := range taskIDs {
		t, err := s.task(ctx, id)
		if errors.Is(err, events.ErrNotFound) {
			return &executor.Admission{}, nil // the child's admission says so, naming it
		}
		if err != nil {
			return nil, err
		}
		status := events.TaskStatusMeaning(t.Status)
		adm.Statuses = append(adm.Statuses, executor.TaskStatus{TaskID: id, Status: status})
		if status == events.TaskReview || status == events.TaskDone {
			done = append(done, id+" is "+status)
		}
	}
	if len(done) == len(taskIDs) && len(done) > 0 {
		adm.Skip = fmt.Sprintf("%s already: nothing for %s to do", strings.Join(done, ", "), workflow)
	}
	return adm, nil
}
