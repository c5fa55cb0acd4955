package shipping_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/activity"
	"github.com/orbitrun/orbit/assets"
	"github.com/orbitrun/orbit/shipping"
)

// The seeded shipping jobs load, and run on an executor that has the
// shipping actions: every action they name is one of shipping's or the
// executor's own.
func TestSeededShippingJobsRunOnTheShippingActions(t *testing.T) {
	t.Parallel()
	cat, err := assets.OpenCatalog(t.TempDir(), assets.CatalogOptions{})
	require.NoError(t, err)
	require.Empty(t, cat.Problems())
	activity.Declare(shipping.ActionNames()...)
	for _, name := range []string{"task_local_pipeline", "task_pr_pipeline", "task_gate_pipeline", "task_auto_pipeline"} {
		job, err := cat.Job(name)
		require.NoError(t, err, name)
		assert.NoError(t, activity.ValidateJob(job), name)
	}
	assert.Equal(t, []string{"gate_starvation_fail", "git_commit", "git_merge", "git_push", "git_rebase", "list_backlog_tasks",
		"pr_failure_handoff", "pr_open", "pr_prepare", "pr_promote", "release_locks",
		"reserve_locks", "sync_base", "task_implementer", "update_task", "validate_bundles", "worktree_setup"}, shipping.ActionNames())
}
