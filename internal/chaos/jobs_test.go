package chaos_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/orbitrun/orbit/internal/testkit"
)

// job is one of the jobs the suite kills the engine in. Its YAML is
// testdata/<name>.yaml and defines the job chaos_<name>.
type job struct {
	name string
	// mid is the hit of the worker and orchestrator failpoints that lands
	// in the middle of the job: those points are reached once per activity
	// the engine runs (or dispatches), in the order the job runs them.
	mid int
	// batch, when positive, is the hit of projector-mid-batch that lands
	// mid-job; zero means the point is not tried on this job. The
	// projector folds whatever events have arrived in one batch, so a
	// loaded machine makes fewer, larger batches: the hit is kept below
	// the bursts of events the job's sleeps separate.
	batch int
	// decided, when positive, is the hit of the point after the one
	// event of a step the orchestrator decides itself is sent that lands
	// mid-job; zero: the job has no such step.
	decided int
	// groundhog jobs run a task's plan on a fresh repository.
	groundhog bool
	// held groundhog jobs hold their commits for approval: the task branch
	// must not move, the held ref gets the commits.
	held bool
	// gate jobs wait for the signal "go", which the suite sends once the
	// run has waited a while.
	gate bool
	// ship jobs are the seeded task_<ship>_pipeline, shipping one task of
	// the project's own repository (see ship_test.go); steps is the
	// number of activities the pipeline runs.
	ship  string
	steps int
}

// jobs is the job table. The order is the order of the result table.
var jobs = []*job{
	// fetch, build, test, ship: killed around build.
	{name: "sequential", mid: 2, batch: 4},
	// prepare, then lint, unit and docs at once, then merge: killed while
	// the branches run.
	{name: "parallel", mid: 3},
	// seven items on three workers, then summary: killed mid fan-out.
	{name: "fan_out", mid: 4, batch: 5},
	// rounds/1/work, rounds/1/note, rounds/2/work (attempt 1 fails), ...:
	// killed at the attempt that fails.
	{name: "loop", mid: 3},
	// fetch, then pure steps the orchestrator decides (an echo, six echo
	// items, an echo of the fan-in), then ship: killed at ship, and with
	// a decided item's event sent and perhaps not stored.
	{name: "decided", mid: 2, decided: 4},
	// prepare, groundhog, report: killed around the Groundhog step.
	{name: "groundhog", mid: 2, groundhog: true},
	// the same on an activity that holds its commits for approval.
	{name: "groundhog_held", mid: 2, groundhog: true, held: true},
	// prepare, a wait for a signal, ship: killed at ship, and at random
	// moments that often fall in the wait.
	{name: "gate", mid: 2, batch: 3, gate: true},
	// worktree, route, implement_one, commit, sync_base, merge,
	// mark_review_one, push: killed at the merge.
	{name: "ship_local", mid: 6, ship: "local", steps: 8},
	// worktree, route, implement_one, commit, sync_base, push, pr_open,
	// promote_tasks: killed at the push.
	{name: "ship_pr", mid: 6, ship: "pr", steps: 8},
}

// jobName is the name the job's YAML gives it; a ship job's is seeded.
func (j *job) jobName() string {
	if j.ship != "" {
		return "task_" + j.ship + "_pipeline"
	}
	return "chaos_" + j.name
}

// yaml reads the job's definition from testdata.
func (j *job) yaml(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", j.name+".yaml"))
	if err != nil {
		t.Fatalf("reading the job %s: %v", j.name, err)
	}
	return string(data)
}

// groundhogFiles returns the plan and replay fixture of the Groundhog
// example: two checkpoints, the second of which fails verification once,
// is rewound and succeeds on its second attempt.
func groundhogFiles(t *testing.T) (plan, fixture string) {
	t.Helper()
	dir := filepath.Join(testkit.ModuleRoot(t), "examples", "groundhog")
	return filepath.Join(dir, "plan.yaml"), filepath.Join(dir, "fixture.json")
}

// groundhogCheckpoints are the checkpoints of the example plan, in order:
// a finished task branch has one squash commit for each, newest first in
// git log.
var groundhogCheckpoints = []string{"greet", "test"}
