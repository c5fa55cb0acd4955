package assets_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/assets"
)

func invokeJob(name, steps string) string {
	return "schemaVersion: 2\nkind: Job\nmetadata: {name: " + name + "}\nspec:\n  steps:\n" + steps
}

func TestCatalogRefusesJobsThatAlwaysInvokeThemselves(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	rec := writeFile(t, root, ".orbit/jobs/rec.yaml", invokeJob("rec",
		"    - {id: again, spec: {type: deterministic, action: job.invoke, config: {job: rec, wait: false}}}\n"))
	a := writeFile(t, root, ".orbit/jobs/a.yaml", invokeJob("a",
		"    - {id: first, spec: {type: deterministic, action: echo}}\n"+
			"    - id: both\n      parallel:\n        branches:\n"+
			"          - {id: x, spec: {type: deterministic, action: echo}}\n"+
			"          - {id: to_b, spec: {type: deterministic, action: job.invoke, config: {job: b}}}\n"))
	b := writeFile(t, root, ".orbit/jobs/b.yaml", invokeJob("b",
		"    - id: again\n      loop:\n        max_iterations: 2\n        steps:\n"+
			"          - {id: to_a, spec: {type: deterministic, action: job.invoke, config: {job: a}}}\n"))
	_, err := openStrict(root, assets.CatalogOptions{})
	require.ErrorIs(t, err, assets.ErrInvalid)
	assert.EqualError(t, err,
		a+`: spec.steps[1].parallel.branches[1]: job.invoke of "b" always runs and leads back to this job (a → b → a): it could never finish; guard the step with `+"`when`"+`, or invoke another job`+"\n"+
			b+`: spec.steps[0].loop.steps[0]: job.invoke of "a" always runs and leads back to this job (b → a → b): it could never finish; guard the step with `+"`when`"+`, or invoke another job`+"\n"+
			rec+`: spec.steps[0]: job.invoke of "rec" always runs and leads back to this job (rec → rec): it could never finish; guard the step with `+"`when`"+`, or invoke another job`)
}

func TestCatalogLoadsRecursionThatCanEnd(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	// Guarded by when, in a fan_out (no items, no run), in a loop over
	// items, through a templated name, or into a job that does not recurse.
	writeFile(t, root, ".orbit/jobs/guarded.yaml", invokeJob("guarded",
		"    - {id: again, when: \"{{ input.n }} != 0\", spec: {type: deterministic, action: job.invoke, config: {job: guarded}}}\n"))
	writeFile(t, root, ".orbit/jobs/tree.yaml", invokeJob("tree",
		"    - id: kids\n      fan_out:\n        items: \"{{ input.children }}\"\n        worker:\n"+
			"          {id: kid, spec: {type: deterministic, action: job.invoke, config: {job: tree}}}\n"+
			"      fan_in: {join: {mode: all}}\n"+
			"    - id: each\n      loop:\n        items: \"{{ input.more }}\"\n        max_iterations: 3\n        steps:\n"+
			"          - {id: one, spec: {type: deterministic, action: job.invoke, config: {job: tree}}}\n"))
	writeFile(t, root, ".orbit/jobs/named.yaml", invokeJob("named",
		"    - {id: any, spec: {type: deterministic, action: job.invoke, config: {job: \"{{ input.job }}\"}}}\n"))
	writeFile(t, root, ".orbit/jobs/caller.yaml", invokeJob("caller",
		"    - {id: hi, spec: {type: deterministic, action: job.invoke, config: {job: hello}}}\n"+
			"    - {id: hi_again, spec: {type: deterministic, action: job.invoke, config: {job: hello}}}\n"))
	c, err := assets.OpenCatalog(root, assets.CatalogOptions{})
	require.NoError(t, err)
	for _, name := range []string{"guarded", "tree", "named", "caller"} {
		_, err := c.Job(name)
		assert.NoError(t, err)
	}
}
