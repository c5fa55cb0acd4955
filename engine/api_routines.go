package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/orbitrun/orbit/assets"
	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/executor"
	"github.com/orbitrun/orbit/routine"
)

// Routine endpoints (DESIGN §14).
const (
	// EndpointRoutines lists the project's routines with their state; it
	// answers a Routines.
	EndpointRoutines = "routines.list"
	// EndpointRoutinePause and EndpointRoutineResume pause and resume a
	// routine; they answer a RoutineChanged.
	EndpointRoutinePause  = "routines.pause"
	EndpointRoutineResume = "routines.resume"
	// EndpointRoutineRunNow fires a routine once, outside its schedule;
	// it answers a Submitted.
	EndpointRoutineRunNow = "routines.run_now"
)

// Routines answers EndpointRoutines: the routines that load, and the
// problems of the files that do not. Unrunnable are the routines that load
// but whose target cannot run now (its job is not in the catalog, disabled
// or invalid): each tick of theirs is recorded skipped (reason refused)
// until it can.
type Routines struct {
	Routines   []routine.Status `json:"routines"`
	Problems   []assets.Problem `json:"problems,omitempty"`
	Unrunnable []assets.Problem `json:"unrunnable,omitempty"`
}

// RoutineRequest names a routine.
type RoutineRequest struct {
	Name string `json:"name"`
}

// RoutineChanged answers a pause or resume: Changed is false when the
// routine already was so.
type RoutineChanged struct {
	Name    string `json:"name"`
	Paused  bool   `json:"paused"`
	Changed bool   `json:"changed"`
}

func (e *Engine) routineEndpoints() map[string]events.Handler {
	return map[string]events.Handler{
		EndpointRoutines:      e.handle(e.apiRoutines),
		EndpointRoutinePause:  e.handle(func(ctx context.Context, raw json.RawMessage) (any, error) { return e.apiRoutinePause(ctx, raw, true) }),
		EndpointRoutineResume: e.handle(func(ctx context.Context, raw json.RawMessage) (any, error) { return e.apiRoutinePause(ctx, raw, false) }),
		EndpointRoutineRunNow: e.handle(e.apiRoutineRunNow),
	}
}

// routineConfig is what the engine's scheduler, and run-now, need.
func (e *Engine) routineConfig() routine.Config {
	return routine.Config{
		Log:     e.log,
		Root:    e.cfg.Root,
		Request: e.routineRequest,
		Logger:  e.logger.With("part", "routines"),
	}
}

// routineRequest builds the run request of a routine's job as the catalog
// has it now, with the engine's environment pinned as a requester's would
// be.
func (e *Engine) routineRequest(name string, input any) (*executor.RunRequest, error) {
	job, err := e.job(name, "")
	if err != nil {
		return nil, err
	}
	if job.Spec.State == assets.JobDisabled {
		return nil, fmt.Errorf("job %s is disabled", name)
	}
	req, err := executor.NewRunRequest(job, input, "")
	if err != nil {
		return nil, err
	}
	if err := req.PinEnv(os.LookupEnv); err != nil {
		return nil, err
	}
	return req, nil
}

// loadRoutines reads the project's routines; problems is nil when every
// file loads.
func (e *Engine) loadRoutines() ([]*routine.Routine, []assets.Problem, error) {
	list, err := routine.Load(e.cfg.Root)
	var bad *assets.Error
	if errors.As(err, &bad) {
		return list, bad.Problems, nil
	}
	return list, nil, err
}

// routinesActive reports whether the project has a routine that is not
// paused: a background engine does not stop for being idle while one has
// ticks to fire (a routine never seen yet counts).
func (e *Engine) routinesActive(ctx context.Context) bool {
	list, _, err := e.loadRoutines()
	if err != nil {
		return false
	}
	for _, r := range list {
		st, _, err := routine.ReadState(ctx, e.log, r.Name)
		if err != nil || !st.Paused {
			return true
		}
	}
	return false
}

func (e *Engine) apiRoutines(ctx context.Context, _ json.RawMessage) (any, error) {
	list, problems, err := e.loadRoutines()
	if err != nil {
		return nil, err
	}
	st, err := routine.Statuses(ctx, e.log, list, time.Now())
	if err != nil {
		return nil, err
	}
	var unrunnable []assets.Problem
	for _, r := range list {
		if _, err := e.routineRequest(r.Job, r.Input); err != nil {
			unrunnable = append(unrunnable, r.TargetProblem(err.Error()+": its ticks are recorded skipped (refused) until it can run"))
		}
	}
	return Routines{Routines: st, Problems: problems, Unrunnable: unrunnable}, nil
}

// findRoutine is the routine a request names, or an error the CLI turns
// into exit 2.
func (e *Engine) findRoutine(raw json.RawMessage) (*routine.Routine, error) {
	var q RoutineRequest
	if err := decode(raw, &q); err != nil {
		return nil, err
	}
	list, problems, err := e.loadRoutines()
	if err != nil {
		return nil, err
	}
	r, err := routine.Find(list, q.Name)
	if err != nil {
		for _, p := range problems {
			if p.File != "" {
				err = fmt.Errorf("%w; %s", err, p)
			}
		}
		return nil, fmt.Errorf("%w: %w", events.ErrInvalidRequest, err)
	}
	return r, nil
}

func (e *Engine) apiRoutinePause(ctx context.Context, raw json.RawMessage, paused bool) (any, error) {
	r, err := e.findRoutine(raw)
	if err != nil {
		return nil, err
	}
	changed, err := routine.SetPaused(ctx, e.log, r.Name, paused, time.Now())
	if err != nil {
		return nil, err
	}
	return RoutineChanged{Name: r.Name, Paused: paused, Changed: changed}, nil
}

func (e *Engine) apiRoutineRunNow(ctx context.Context, raw json.RawMessage) (any, error) {
	r, err := e.findRoutine(raw)
	if err != nil {
		return nil, err
	}
	id, err := routine.RunNow(ctx, e.routineConfig(), r)
	if err != nil {
		return nil, fmt.Errorf("%w: routine %s: %w", events.ErrInvalidRequest, r.Name, err)
	}
	return Submitted{RunID: id}, nil
}
