package activity

import (
	"fmt"
	"strings"

	"github.com/orbitrun/orbit/agent"
	"github.com/orbitrun/orbit/assets"
	"github.com/orbitrun/orbit/interpreter"
)

// ValidateJob reports what in a loaded job this executor cannot run: an
// activity type without a runner, or a deterministic action that does not
// exist. Loading (package assets) has already checked the grammar; errors
// name the job's file and the YAML path of the step.
func ValidateJob(job *assets.Job) error {
	if job.Spec.State == assets.JobDisabled {
		return fmt.Errorf("%w: %s (%s)", interpreter.ErrJobDisabled, job.Name, job.Source)
	}
	if rec := job.Spec.RecoveryActivity; rec != nil {
		if err := validateActivity(&rec.Spec); err != nil {
			return fmt.Errorf("%w: %s: spec.recovery_activity: %s: %v", interpreter.ErrInvalidJob, job.Source, rec.Name, err)
		}
	}
	if hook := job.Spec.FailureActivity; hook != nil {
		if err := validateActivity(&hook.Spec); err != nil {
			return fmt.Errorf("%w: %s: spec.failure_activity: %s: %v", interpreter.ErrInvalidJob, job.Source, hook.Name, err)
		}
	}
	return validateSteps(job.Source, "spec.steps", job.Spec.Steps)
}

func validateSteps(source, path string, steps []assets.Step) error {
	for i := range steps {
		if err := validateStep(source, fmt.Sprintf("%s[%d]", path, i), &steps[i]); err != nil {
			return err
		}
	}
	return nil
}

func validateStep(source, at string, st *assets.Step) error {
	if rec := st.RecoveryActivity; rec != nil {
		if err := validateActivity(&rec.Spec); err != nil {
			return fmt.Errorf("%w: %s: %s.recovery_activity: %s: %v", interpreter.ErrInvalidJob, source, at, rec.Name, err)
		}
	}
	switch {
	case st.Parallel != nil:
		return validateSteps(source, at+".parallel.branches", st.Parallel.Branches)
	case st.FanOut != nil:
		return validateStep(source, at+".fan_out.worker", &st.FanOut.Worker)
	case st.Loop != nil:
		return validateSteps(source, at+".loop.steps", st.Loop.Steps)
	case st.Wait != nil:
		return nil
	case st.Activity == nil:
		return fmt.Errorf("%w: %s: %s: the step has no body", interpreter.ErrInvalidJob, source, at)
	}
	if err := validateActivity(st.Activity); err != nil {
		if st.Target != "" {
			return fmt.Errorf("%w: %s: %s.target: %s: %v", interpreter.ErrInvalidJob, source, at, st.Target, err)
		}
		return fmt.Errorf("%w: %s: %s.spec.%v", interpreter.ErrInvalidJob, source, at, err)
	}
	return nil
}

func validateActivity(spec *assets.ActivitySpec) error {
	switch spec.Type {
	case assets.TypeShell:
		return nil
	case assets.TypeAgentLoop, assets.TypeGroundhog:
		for _, name := range spec.Tools {
			if _, ok := agent.Builtin(name); !ok {
				return fmt.Errorf("tools: unknown tool %s (known: %s)", assets.Quote(name), strings.Join(agent.BuiltinNames(), ", "))
			}
		}
		return nil
	case assets.TypeDeterministic:
		if _, ok := actions[spec.Action]; !ok && !interpreter.IsChildAction(spec) && workerActions[spec.Action] == nil && !isDeclared(spec.Action) {
			return fmt.Errorf("action: unknown deterministic action %s (known: %s)", assets.Quote(spec.Action), actionNames())
		}
		return nil
	}
	return fmt.Errorf("type: activity type %s cannot run on this engine", spec.Type)
}
