package assets_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/assets"
)

// job wraps steps (YAML indented by four spaces) in a Job envelope.
func job(steps string) []byte {
	return []byte("schemaVersion: 2\nkind: Job\nmetadata: {name: j}\nspec:\n  steps:\n" + steps)
}

const echo = "{type: deterministic, action: echo}"

func TestParseJobDefaults(t *testing.T) {
	t.Parallel()
	j, err := assets.ParseJob("j.yaml", job(`
    - id: a
      retry: {max_attempts: 3}
      spec: {type: shell, program: echo, allowed_programs: [echo]}
    - id: b
      parallel:
        branches:
          - {id: b1, spec: `+echo+`}
    - id: c
      fan_out:
        items: "{{ input.list }}"
        worker: {id: w, spec: {type: agent_loop, provider: claude}}
      fan_in: {}
    - id: d
      loop:
        max_iterations: 2
        steps:
          - {id: d1, spec: {type: groundhog, provider: claude}}
`), nil)
	require.NoError(t, err)
	assert.Equal(t, "j", j.Name)
	assert.Equal(t, "j.yaml", j.Source)
	assert.Equal(t, assets.LayerFile, j.Layer)
	assert.Equal(t, "enabled", j.Spec.State)
	assert.Equal(t, "workflow", j.Spec.Kind)
	assert.Equal(t, 1, j.Spec.MaxActiveRuns)
	assert.Nil(t, j.Spec.DefaultInput)

	a := j.Spec.Steps[0]
	assert.Equal(t, &assets.Retry{MaxAttempts: 3, InitialBackoffMS: 1000, BackoffCapMS: 60000, BackoffStrategy: "exponential"}, a.Retry)
	assert.Equal(t, &assets.ActivitySpec{Type: "shell", Program: "echo", AllowedPrograms: []string{"echo"},
		TimeoutSeconds: 300, ExpectedExitCodes: []int{0}}, a.Activity)
	assert.Empty(t, a.Target)

	b := j.Spec.Steps[1]
	require.NotNil(t, b.Parallel)
	assert.Equal(t, assets.Join{Mode: "all"}, b.Parallel.Join)
	assert.Equal(t, "b1", b.Parallel.Branches[0].ID)
	assert.Nil(t, b.Activity)

	c := j.Spec.Steps[2]
	require.NotNil(t, c.FanOut)
	assert.Equal(t, 4, c.FanOut.MaxWorkers)
	assert.Equal(t, "{{ input.list }}", c.FanOut.Items)
	assert.Equal(t, &assets.ActivitySpec{Type: "agent_loop", OnDenial: "terminate", Backend: "http", Provider: "claude"}, c.FanOut.Worker.Activity,
		"backend auto is resolved at load")
	assert.Equal(t, &assets.FanIn{Join: assets.Join{Mode: "all"}}, c.FanIn)

	d := j.Spec.Steps[3]
	require.NotNil(t, d.Loop)
	assert.Equal(t, 2, d.Loop.MaxIterations)
	assert.Equal(t, &assets.ActivitySpec{Type: "groundhog", OnDenial: "terminate", Provider: "claude"}, d.Loop.Steps[0].Activity,
		"attempt_budget_default stays 0: the fallback to 3 is applied at run time")
}

func TestParseJobFields(t *testing.T) {
	t.Parallel()
	data := []byte(`schemaVersion: 2
kind: Job
metadata:
  name: full
  description: Every job field.
  labels: {team: infra, tier: "1"}
spec:
  state: disabled
  kind: subroutine
  max_active_runs: 3
  recovery_activity: activity:deterministic_reference
  default_input: {n: 1, list: [a, 2.5, true, null], nested: {x: "{{ not rendered at load }}"}}
  steps:
    - id: a
      when: "{{ input.n }} == 1"
      recovery_activity: shell_reference
      target: activity:shell_reference
      default_input: {message: "{{ input.n }}"}
      timeout_seconds: 5
      session: s1
      fsProfile: readonly
    - id: vote
      parallel:
        join: {mode: quorum, n: 2}
        branches:
          - {id: x, spec: ` + echo + `}
          - {id: y, spec: ` + echo + `}
          - {id: z, spec: ` + echo + `}
    - id: each
      fan_out:
        items: "{{ steps.a.output.stdout }}"
        max_workers: 8
        worker: {id: w, spec: ` + echo + `, default_input: {file: "{{ item }}"}}
      fan_in: {join: {mode: any}, collect: results}
    - id: again
      loop:
        items: "{{ steps.results.output }}"
        max_iterations: 5
        break_when: "{{ steps.inner.output.done }} == true"
        steps:
          - {id: inner, spec: ` + echo + `, default_input: {i: "{{ iteration }}", item: "{{ item }}"}}
`)
	j, err := assets.ParseJob("full.yaml", data, seeded(t).Activity)
	require.NoError(t, err)
	assert.Equal(t, "Every job field.", j.Description)
	assert.Equal(t, map[string]string{"team": "infra", "tier": "1"}, j.Labels)
	assert.Equal(t, "disabled", j.Spec.State)
	assert.Equal(t, "subroutine", j.Spec.Kind)
	assert.Equal(t, 3, j.Spec.MaxActiveRuns)
	require.NotNil(t, j.Spec.RecoveryActivity)
	assert.Equal(t, "deterministic_reference", j.Spec.RecoveryActivity.Name)
	assert.Equal(t, "echo", j.Spec.RecoveryActivity.Spec.Action)
	// YAML numbers are stored as float64, as a JSON round trip gives them back.
	assert.Equal(t, map[string]any{"n": float64(1), "list": []any{"a", 2.5, true, nil},
		"nested": map[string]any{"x": "{{ not rendered at load }}"}}, j.Spec.DefaultInput)

	a := j.Spec.Steps[0]
	assert.Equal(t, "activity:shell_reference", a.Target)
	assert.Equal(t, "echo", a.Activity.Program)
	assert.Equal(t, "shell_reference", a.RecoveryActivity.Name)
	assert.Equal(t, 5, a.TimeoutSeconds)
	assert.Equal(t, "s1", a.Session)
	assert.Equal(t, "readonly", a.FSProfile)
	assert.Equal(t, map[string]any{"message": "{{ input.n }}"}, a.DefaultInput)

	assert.Equal(t, assets.Join{Mode: "quorum", N: 2}, j.Spec.Steps[1].Parallel.Join)
	assert.Equal(t, 8, j.Spec.Steps[2].FanOut.MaxWorkers)
	assert.Equal(t, &assets.FanIn{Join: assets.Join{Mode: "any"}, Collect: "results"}, j.Spec.Steps[2].FanIn)
	assert.Equal(t, "{{ steps.inner.output.done }} == true", j.Spec.Steps[3].Loop.BreakWhen)
}

// TestJobJSONRoundTrip checks that the stored form of a loaded job decodes
// to the same value: what the log carries is exactly what was validated.
func TestJobJSONRoundTrip(t *testing.T) {
	t.Parallel()
	c := seeded(t)
	for _, e := range c.Jobs() {
		j, err := c.Job(e.Name)
		require.NoError(t, err)
		data, err := json.Marshal(j)
		require.NoError(t, err)
		var back assets.Job
		require.NoError(t, json.Unmarshal(data, &back))
		assert.Equal(t, *j, back, e.Name)
	}
}

func TestTargetSpecIsACopy(t *testing.T) {
	t.Parallel()
	c := seeded(t)
	j, err := assets.ParseJob("j.yaml", job("    - {id: a, target: activity:deterministic_reference}\n"), c.Activity)
	require.NoError(t, err)
	j.Spec.Steps[0].Activity.Config["greeting"] = "changed"
	a, err := c.Activity("deterministic_reference")
	require.NoError(t, err)
	assert.Equal(t, "Hello, {{ input.name }}!", a.Spec.Config["greeting"])
}

func TestResolveErrors(t *testing.T) {
	t.Parallel()
	data := job("    - {id: a, target: activity:x}\n")
	_, err := assets.ParseJob("j.yaml", data, nil)
	assert.EqualError(t, err, `j.yaml:6: spec.steps[0].target: unknown activity "x"`)

	_, err = assets.ParseJob("j.yaml", data, func(string) (*assets.Activity, error) {
		return nil, errors.New("catalog offline")
	})
	assert.EqualError(t, err, `j.yaml:6: spec.steps[0].target: activity "x": catalog offline`)
}

// TestStepVisibility lists references a step may make, and ones it may not
// with the reason given.
func TestStepVisibility(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		steps string
		want  string // "" for a valid job, else a substring of the error
	}{
		{"earlier sibling", `
    - {id: a, spec: ` + echo + `}
    - {id: b, spec: ` + echo + `, when: "{{ steps.a.state }} == success"}`, ""},
		{"branch ids after the parallel", `
    - id: p
      parallel: {branches: [{id: l, spec: ` + echo + `}, {id: r, spec: ` + echo + `}]}
    - {id: b, spec: ` + echo + `, default_input: {x: "{{ steps.l.output }}{{ steps.r.output }}{{ steps.p.output }}"}}`, ""},
		{"loop body ids after the loop", `
    - id: lp
      loop: {max_iterations: 2, steps: [{id: body, spec: ` + echo + `}]}
    - {id: b, spec: ` + echo + `, when: "{{ steps.body.state }}"}`, ""},
		{"break_when sees the loop body", `
    - id: lp
      loop:
        max_iterations: 2
        break_when: "{{ steps.body.output.done }} && {{ iteration }} == 2"
        steps: [{id: body, spec: ` + echo + `}]`, ""},
		{"ancestors' earlier siblings, from deep inside", `
    - {id: first, spec: ` + echo + `}
    - id: p
      parallel:
        branches:
          - id: lp
            loop:
              max_iterations: 2
              steps:
                - {id: one, spec: ` + echo + `}
                - {id: two, spec: ` + echo + `, when: "{{ steps.first.state }} == {{ steps.one.state }}"}`, ""},
		{"collect name after the fan-out", `
    - id: fo
      fan_out: {items: "{{ input.x }}", worker: {id: w, spec: ` + echo + `, default_input: "{{ item }}"}}
      fan_in: {collect: gathered}
    - {id: b, spec: ` + echo + `, when: "{{ steps.gathered.state }} == {{ steps.fo.state }}"}`, ""},
		{"item and iteration in a loop over items", `
    - id: lp
      loop: {items: "{{ input.list }}", max_iterations: 9, steps: [{id: s, spec: ` + echo + `, when: "{{ item }} == {{ iteration }}"}]}`, ""},
		{"sequential steps inside a worker", `
    - id: fo
      fan_out:
        items: "{{ input.x }}"
        worker:
          id: w
          loop: {max_iterations: 1, steps: [{id: s1, spec: ` + echo + `}, {id: s2, spec: ` + echo + `, when: "{{ steps.s1.state }}"}]}
      fan_in: {}`, ""},

		{"later step", `
    - {id: a, spec: ` + echo + `, when: "{{ steps.b.state }}"}
    - {id: b, spec: ` + echo + `}`, `step "b" has not run yet at this point`},
		{"itself", `
    - {id: a, spec: ` + echo + `, when: "{{ steps.a.state }}"}`, `step "a" has not run yet at this point`},
		{"the enclosing loop", `
    - id: lp
      loop: {max_iterations: 2, steps: [{id: s, spec: ` + echo + `, when: "{{ steps.lp.state }}"}]}`, `step "lp" has not run yet at this point`},
		{"unknown step, with a suggestion", `
    - {id: build, spec: ` + echo + `}
    - {id: b, spec: ` + echo + `, when: "{{ steps.biuld.state }}"}`, `unknown step "biuld" (did you mean "build"?)`},
		{"worker internals from outside", `
    - id: fo
      fan_out: {items: "{{ input.x }}", worker: {id: w, spec: ` + echo + `}}
      fan_in: {}
    - {id: b, spec: ` + echo + `, when: "{{ steps.w.state }}"}`, `step "w" is inside step "fo" and cannot be referenced from here`},
		{"two levels into a parallel", `
    - id: p
      parallel:
        branches:
          - id: lp
            loop: {max_iterations: 1, steps: [{id: deep, spec: ` + echo + `}]}
    - {id: b, spec: ` + echo + `, when: "{{ steps.deep.state }}"}`, `step "deep" is inside step "lp" and cannot be referenced from here`},
		{"a later step's body", `
    - {id: a, spec: ` + echo + `, when: "{{ steps.inner.state }}"}
    - id: lp
      loop: {max_iterations: 1, steps: [{id: inner, spec: ` + echo + `}]}`, `step "inner" has not run yet at this point`},
		{"item outside any fan-out", `
    - {id: a, spec: ` + echo + `, default_input: {x: "{{ item.x }}"}}`, `{{ item.x }}: item is only available inside a fan_out worker or a loop over items`},
		{"item in a loop without items", `
    - id: lp
      loop: {max_iterations: 2, steps: [{id: s, spec: ` + echo + `, when: "{{ item }}"}]}`, `item is only available`},
		{"item in the fan_out's own items", `
    - id: fo
      fan_out: {items: "{{ item }}", worker: {id: w, spec: ` + echo + `}}
      fan_in: {}`, `item is only available`},
		{"iteration outside a loop", `
    - id: fo
      fan_out: {items: "{{ input.x }}", worker: {id: w, spec: ` + echo + `, when: "{{ iteration }} == 1"}}
      fan_in: {}`, `iteration is only available inside a loop`},
		{"templates in a targeted activity", `
    - {id: a, target: activity:deterministic_reference}
    - {id: b, target: activity:templated}
    - {id: later, spec: ` + echo + `}`, `spec.steps[1].target: activity "templated" config.x: {{ steps.later.output }}: step "later" has not run yet at this point`},
	}
	templated := &assets.Activity{Name: "templated", Spec: assets.ActivitySpec{Type: "deterministic", Action: "echo",
		Config: map[string]any{"x": "{{ steps.later.output }}", "y": "{{ steps.a.output }}"}}}
	cat := seeded(t)
	resolve := func(name string) (*assets.Activity, error) {
		if name == "templated" {
			return templated, nil
		}
		return cat.Activity(name)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := assets.ParseJob("j.yaml", job(strings.TrimPrefix(tt.steps, "\n")+"\n"), resolve)
			if tt.want == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, assets.ErrInvalid)
			assert.Contains(t, err.Error(), tt.want)
			assert.Equal(t, 1, strings.Count(err.Error(), "\n")+1, "exactly one problem: %v", err)
		})
	}
}

func TestSessionInLoopWithCLIBackend(t *testing.T) {
	t.Parallel()
	steps := func(backend string) []byte {
		return job(`    - id: lp
      loop:
        max_iterations: 3
        steps:
          - id: talk
            session: chat
            spec: {type: agent_loop, instruction: hi, provider: claude` + backend + `}
`)
	}
	// The seeded executor claude is Claude Code, which continues its
	// session.
	_, err := assets.ParseJob("j.yaml", steps(", backend: cli"), nil)
	require.NoError(t, err)
	// auto resolves to http for ParseJob.
	_, err = assets.ParseJob("j.yaml", steps(""), nil)
	require.NoError(t, err)

	// A catalog whose backend is cli resolves auto to cli: an executor
	// whose output is text cannot continue a session.
	root := t.TempDir()
	writeFile(t, root, ".orbit/executors/claude.yaml", "schemaVersion: 2\nkind: Executor\nmetadata: {name: claude}\nspec: {command: agent, output: text}\n")
	writeFile(t, root, ".orbit/jobs/j.yaml", string(steps("")))
	_, err = openStrict(root, assets.CatalogOptions{Backend: "cli"})
	require.ErrorIs(t, err, assets.ErrInvalid)
	assert.Contains(t, err.Error(), "spec.steps[0].loop.steps[0].session: cannot be bound inside a loop when the agent_loop runs on the cli backend (backend auto resolves to cli) with an executor other than claude_code or codex: it starts a fresh process each step (output text)")
	_, err = openStrict(root, assets.CatalogOptions{Backend: "http"})
	require.NoError(t, err)
	// http explicitly is fine even when the default is cli.
	writeFile(t, root, ".orbit/jobs/j.yaml", string(steps(", backend: http")))
	_, err = openStrict(root, assets.CatalogOptions{Backend: "cli"})
	require.NoError(t, err)

	// Claude Code and Codex continue their own sessions; an executor whose
	// output is text starts afresh each step.
	for output, ok := range map[string]bool{"claude_code": true, "codex": true, "text": false} {
		writeFile(t, root, ".orbit/executors/claude.yaml", "schemaVersion: 2\nkind: Executor\nmetadata: {name: claude}\nspec: {command: agent, output: "+output+"}\n")
		writeFile(t, root, ".orbit/jobs/j.yaml", string(steps(", backend: cli")))
		_, err = openStrict(root, assets.CatalogOptions{})
		if ok {
			assert.NoError(t, err, output)
		} else {
			require.ErrorIs(t, err, assets.ErrInvalid, output)
			assert.Contains(t, err.Error(), "it starts a fresh process each step (output text)")
		}
	}
}

func TestYAMLAnchorsAndMergeKeys(t *testing.T) {
	t.Parallel()
	j, err := assets.ParseJob("j.yaml", job(`    - id: a
      spec: &base {type: shell, program: echo, allowed_programs: [echo, printf], timeout_seconds: 5}
    - id: b
      spec:
        <<: *base
        program: printf
        args: [x]
`), nil)
	require.NoError(t, err)
	b := j.Spec.Steps[1].Activity
	assert.Equal(t, "printf", b.Program)
	assert.Equal(t, 5, b.TimeoutSeconds)
	assert.Equal(t, []string{"x"}, b.Args)
}

func TestAliasExpansionIsBounded(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	b.WriteString("schemaVersion: 2\nkind: Job\nmetadata: {name: bomb}\nspec:\n  default_input:\n    l0: &l0 [x, x, x, x, x, x, x, x, x, x]\n")
	for i := 1; i < 10; i++ {
		b.WriteString("    l" + string(rune('0'+i)) + ": &l" + string(rune('0'+i)) + " [")
		for k := range 10 {
			if k > 0 {
				b.WriteString(", ")
			}
			b.WriteString("*l" + string(rune('0'+i-1)))
		}
		b.WriteString("]\n")
	}
	b.WriteString("  steps: [{id: a, spec: " + echo + "}]\n")
	_, err := assets.ParseJob("bomb.yaml", []byte(b.String()), nil)
	assert.EqualError(t, err, "bomb.yaml: document is too large once its aliases are expanded")
}

func TestParseJobProblems(t *testing.T) {
	t.Parallel()
	tests := []struct{ name, body, want string }{
		{"steps missing", "spec: {state: active}\n", "j.yaml:4: spec.steps: is required"},
		{"steps empty", "spec: {steps: []}\n", "j.yaml:4: spec.steps: must have at least one step"},
		{"steps not a list", "spec: {steps: {id: a}}\n", `j.yaml:4: spec.steps: must be a list of steps, not a mapping`},
		{"step not a mapping", "spec: {steps: [a]}\n", `j.yaml:4: spec.steps[0]: must be a mapping, not "a"`},
		{"job fields", "spec:\n  state: paused\n  kind: batch\n  max_active_runs: 0\n  recovery_activity: 'bad name'\n  steps: [{id: a, spec: " + echo + "}]\n",
			"j.yaml:5: spec.state: \"paused\" is not one of enabled, disabled, active\n" +
				"j.yaml:6: spec.kind: \"batch\" is not one of workflow, subroutine\n" +
				"j.yaml:7: spec.max_active_runs: must be ≥ 1\n" +
				"j.yaml:8: spec.recovery_activity: \"bad name\" is not an activity name"},
		{"n without quorum", "spec:\n  steps:\n    - id: p\n      parallel: {join: {mode: any, n: 1}, branches: [{id: a, spec: " + echo + "}]}\n",
			"j.yaml:7: spec.steps[0].parallel.join.n: is only valid with mode quorum"},
		{"quorum without n", "spec:\n  steps:\n    - id: p\n      parallel: {join: {mode: quorum}, branches: [{id: a, spec: " + echo + "}]}\n",
			"j.yaml:7: spec.steps[0].parallel.join.n: is required with mode quorum"},
		{"no branches", "spec:\n  steps:\n    - id: p\n      parallel: {join: {mode: quorum, n: 1}, branches: []}\n",
			"j.yaml:7: spec.steps[0].parallel.branches: must have at least one step"},
		{"fan_in quorum", "spec:\n  steps:\n    - id: f\n      fan_out: {items: x, worker: {id: w, spec: " + echo + "}, max_workers: 0}\n      fan_in: {join: {mode: quorum, n: 0}, collect: '9'}\n",
			"j.yaml:7: spec.steps[0].fan_out.max_workers: must be ≥ 1\n" +
				"j.yaml:8: spec.steps[0].fan_in.join.n: must be ≥ 1\n" +
				"j.yaml:8: spec.steps[0].fan_in.collect: \"9\" must start with a letter or _ and contain only letters, digits, _ and -"},
		{"fan_out without worker or items", "spec:\n  steps:\n    - id: f\n      fan_out: {max_workers: 2}\n      fan_in: {}\n",
			"j.yaml:7: spec.steps[0].fan_out.items: is required\nj.yaml:7: spec.steps[0].fan_out.worker: is required"},
		{"collect clashes with a step id", "spec:\n  steps:\n    - {id: a, spec: " + echo + "}\n    - id: f\n      fan_out: {items: x, worker: {id: w, spec: " + echo + "}}\n      fan_in: {collect: a}\n",
			"j.yaml:9: spec.steps[1].fan_in.collect: duplicate step id \"a\" (also at spec.steps[0].id)"},
		{"loop without max_iterations", "spec:\n  steps:\n    - id: l\n      loop: {steps: [{id: a, spec: " + echo + "}]}\n",
			"j.yaml:7: spec.steps[0].loop.max_iterations: is required"},
		{"merge of a list", "spec:\n  steps:\n    - id: a\n      spec: {<<: [1], type: deterministic, action: echo}\n",
			"j.yaml:7: spec.steps[0].spec: a merge key (<<) must name a mapping, not \"1\""},
		{"bad step timeout", "spec:\n  steps:\n    - {id: a, spec: " + echo + ", timeout_seconds: 0}\n",
			"j.yaml:6: spec.steps[0].timeout_seconds: must be ≥ 1"},
		{"fan_in alone", "spec:\n  steps:\n    - {id: a, fan_in: {}}\n", "j.yaml:6: spec.steps[0].fan_in: needs a fan_out on the same step"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := assets.ParseJob("j.yaml", []byte("schemaVersion: 2\nkind: Job\nmetadata: {name: j}\n"+tt.body), nil)
			require.ErrorIs(t, err, assets.ErrInvalid)
			assert.EqualError(t, err, tt.want)
		})
	}
}

// TestJobState: state is enabled by default, enabled or disabled as the
// upstream system writes it, and active (Orbit's former word) is enabled.
func TestJobState(t *testing.T) {
	t.Parallel()
	for written, want := range map[string]string{"": "enabled", "enabled": "enabled", "active": "enabled", "disabled": "disabled"} {
		spec := "  steps: [{id: a, spec: " + echo + "}]\n"
		if written != "" {
			spec = "  state: " + written + "\n" + spec
		}
		j, err := assets.ParseJob("j.yaml", []byte("schemaVersion: 2\nkind: Job\nmetadata: {name: j}\nspec:\n"+spec), nil)
		require.NoError(t, err, written)
		assert.Equal(t, want, j.Spec.State, written)
	}
}
