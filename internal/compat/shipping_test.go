package compat_test

import (
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/activity"
	"github.com/orbitrun/orbit/assets"
	"github.com/orbitrun/orbit/shipping"
)

// shippingCorpus holds the upstream system's shipping jobs as they were
// at the seeds' date (v0.13.0, 2026-08-16), unmodified.
const shippingCorpus = "testdata/upstream/shipping"

// TestUpstreamShippingJobsLoadAgainstTheSeededActivities: each upstream
// shipping job, as a project's env layer over Orbit's seeded activities
// of the same names, loads without a problem and validates on an engine
// that has the shipping actions; every activity it names is one Orbit
// seeds.
func TestUpstreamShippingJobsLoadAgainstTheSeededActivities(t *testing.T) {
	t.Parallel()
	dir, err := filepath.Abs(shippingCorpus)
	require.NoError(t, err)
	cat, err := assets.OpenCatalog(t.TempDir(), assets.CatalogOptions{JobDir: dir})
	require.NoError(t, err)
	require.Empty(t, cat.Problems(), "every upstream shipping job loads")
	activity.Declare(shipping.ActionNames()...)

	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	require.NoError(t, err)
	var names []string
	for _, f := range files {
		names = append(names, strings.TrimSuffix(filepath.Base(f), ".yaml"))
	}
	sort.Strings(names)
	require.Equal(t, []string{"task_auto_pipeline", "task_gate_pipeline", "task_local_pipeline", "task_pr_pipeline"}, names)
	seeded, err := assets.OpenCatalog(t.TempDir(), assets.CatalogOptions{})
	require.NoError(t, err)
	for _, name := range names {
		job, err := cat.Job(name)
		require.NoError(t, err, name)
		assert.Equal(t, filepath.Join(dir, name+".yaml"), job.Source, "%s is the upstream file, not Orbit's seeded job of the name", name)
		assert.NoError(t, activity.ValidateJob(job), name)
		for _, target := range targets(job.Spec.Steps) {
			_, err := seeded.Activity(strings.TrimPrefix(target, "activity:"))
			assert.NoError(t, err, "%s: %s is a seeded activity", name, target)
		}
		if hook := job.Spec.FailureActivity; hook != nil {
			_, err := seeded.Activity(hook.Name)
			assert.NoError(t, err, "%s: failure_activity %s", name, hook.Name)
		}
	}
}

// targets returns the activity targets of steps, nested ones included.
func targets(steps []assets.Step) []string {
	var out []string
	for _, st := range steps {
		if strings.HasPrefix(st.Target, "activity:") {
			out = append(out, st.Target)
		}
		if st.RecoveryActivity != nil {
			out = append(out, "activity:"+st.RecoveryActivity.Name)
		}
		if st.Loop != nil {
			out = append(out, targets(st.Loop.Steps)...)
		}
		if st.FanOut != nil {
			out = append(out, targets([]assets.Step{st.FanOut.Worker})...)
		}
	}
	return out
}
