package executor

import (
	"fmt"
	"sort"

	"github.com/orbitrun/orbit/assets"
	"github.com/orbitrun/orbit/events"
)

// scope is a pipeline context: the input the steps of one step list see,
// the results of the steps that ran before, and the key prefix that makes
// step instance keys unique (e.g. "per_item/3/").
type scope struct {
	input     any
	root      string
	prefix    string
	results   map[string]assets.StepResult
	item      any
	hasItem   bool
	iteration int
}

func newScope(input any, root string) *scope {
	return &scope{input: input, root: root, results: make(map[string]assets.StepResult)}
}

// key is the instance key of the step with the given id in this scope.
func (sc *scope) key(id string) string { return sc.prefix + id }

// record makes a step's result visible to the steps after it.
func (sc *scope) record(id string, res assets.StepResult) { sc.results[id] = res }

// workspace is the directory steps of this scope run in: workspace_path
// from the input, else the project root.
func (sc *scope) workspace(input any) string {
	if m, ok := input.(map[string]any); ok {
		if p, ok := m["workspace_path"].(string); ok && p != "" {
			return p
		}
	}
	return sc.root
}

// templates returns the template scope for rendering with the given input.
func (sc *scope) templates(input any, env func(string) (string, bool)) *assets.Scope {
	return &assets.Scope{
		Input:         input,
		Steps:         sc.results,
		Env:           env,
		Item:          sc.item,
		HasItem:       sc.hasItem,
		Iteration:     sc.iteration,
		WorkspacePath: sc.workspace(sc.input),
	}
}

// prepare renders everything a worker needs for one attempt of an activity
// step: the step input (the pipeline input with the rendered default_input
// merged over it) and the activity's own templated fields, rendered against
// that input.
func (x *interpreter) prepare(sc *scope, st *assets.Step, key string, n int) (*stepCommand, error) {
	env := x.o.cfg.Env
	input := sc.input
	if st.DefaultInput != nil {
		rendered, err := assets.RenderValue(st.DefaultInput, sc.templates(sc.input, env))
		if err != nil {
			return nil, fail(events.KindValidation, false, "default_input: %v", err)
		}
		input = assets.MergeInput(sc.input, rendered)
	}
	spec := *st.Activity
	ts := sc.templates(input, env)
	switch spec.Type {
	case assets.TypeShell:
		program, err := renderText(spec.Program, ts)
		if err != nil {
			return nil, fail(events.KindValidation, false, "program: %v", err)
		}
		spec.Program = program
		args := make([]string, len(spec.Args))
		for i, a := range spec.Args {
			if args[i], err = renderText(a, ts); err != nil {
				return nil, fail(events.KindValidation, false, "args[%d]: %v", i, err)
			}
		}
		spec.Args = args
	case assets.TypeDeterministic:
		if spec.Config != nil {
			cfg, err := assets.RenderValue(spec.Config, ts)
			if err != nil {
				return nil, fail(events.KindValidation, false, "config: %v", err)
			}
			m, ok := cfg.(map[string]any)
			if !ok {
				return nil, fail(events.KindValidation, false, "config rendered to %T, want an object", cfg)
			}
			spec.Config = m
		}
	}
	timeout := spec.TimeoutSeconds
	if st.TimeoutSeconds > 0 {
		timeout = st.TimeoutSeconds
	}
	return &stepCommand{
		RunID:     x.runID,
		Job:       x.job.Name,
		StepKey:   key,
		Attempt:   n,
		Activity:  spec,
		Input:     input,
		Workspace: sc.workspace(input),
		Timeout:   timeout,
		StartedID: stepEventID(events.StepStarted, x.runID, key, n),
	}, nil
}

func renderText(s string, sc *assets.Scope) (string, error) {
	t, err := assets.ParseTemplate(s)
	if err != nil {
		return "", err
	}
	return t.Render(sc)
}

func sortStrings(s []string) { sort.Strings(s) }

// ValidateJob reports what in a loaded job this executor cannot run: an
// activity type without a runner, or a deterministic action that does not
// exist. Loading (package assets) has already checked the grammar; errors
// name the job's file and the YAML path of the step.
func ValidateJob(job *assets.Job) error {
	if job.Spec.State == "disabled" {
		return fmt.Errorf("%w: %s (%s)", ErrJobDisabled, job.Name, job.Source)
	}
	var walk func(path string, steps []assets.Step) error
	walk = func(path string, steps []assets.Step) error {
		for i := range steps {
			st := &steps[i]
			at := fmt.Sprintf("%s[%d]", path, i)
			if st.Activity == nil {
				return fmt.Errorf("%w: %s: %s: parallel, fan_out and loop steps are not supported", ErrInvalidJob, job.Source, at)
			}
			if err := validateActivity(st.Activity); err != nil {
				if st.Target != "" {
					return fmt.Errorf("%w: %s: %s.target: %s: %v", ErrInvalidJob, job.Source, at, st.Target, err)
				}
				return fmt.Errorf("%w: %s: %s.spec.%v", ErrInvalidJob, job.Source, at, err)
			}
		}
		return nil
	}
	return walk("spec.steps", job.Spec.Steps)
}

func validateActivity(spec *assets.ActivitySpec) error {
	switch spec.Type {
	case assets.TypeShell:
		return nil
	case assets.TypeDeterministic:
		if _, ok := actions[spec.Action]; !ok {
			return fmt.Errorf("action: unknown deterministic action %q (known: %s)", spec.Action, actionNames())
		}
		return nil
	}
	return fmt.Errorf("type: activity type %s cannot run on this engine", spec.Type)
}
