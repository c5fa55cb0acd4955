package shipping

import (
	"slices"

	"github.com/orbitrun/orbit/activity"
)

// Actions returns the shipping actions by name, for the engine's workers.
// Those that change a repository are External: their start is recorded
// before they run.
func (s *Service) Actions() map[string]activity.Action {
	return map[string]activity.Action{
		"worktree_setup":       {Run: s.worktreeSetup, External: true},
		"git_commit":           {Run: s.gitCommit, External: true},
		"sync_base":            {Run: s.syncBase, External: true},
		"git_merge":            {Run: s.gitMerge, External: true},
		"git_push":             {Run: s.gitPush, External: true},
		"git_rebase":           {Run: s.gitRebase, External: true},
		"pr_prepare":           {Run: s.prPrepare},
		"pr_open":              {Run: s.prOpen, External: true},
		"pr_promote":           {Run: s.prPromote},
		"pr_failure_handoff":   {Run: s.prFailureHandoff, External: true},
		"update_task":          {Run: s.updateTask},
		"list_backlog_tasks":   {Run: s.listBacklog},
		"validate_bundles":     {Run: validateBundles},
		"reserve_locks":        {Run: s.reserveLocks},
		"release_locks":        {Run: s.releaseLocks},
		"gate_starvation_fail": {Run: s.gateStarvationFail},
		"task_implementer":     {Run: s.taskImplementer},
	}
}

// ActionNames returns the names of the shipping actions, sorted: what the
// engine declares to job validation (activity.Declare).
func ActionNames() []string {
	var s Service
	names := make([]string, 0, 16)
	for n := range s.Actions() {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}
