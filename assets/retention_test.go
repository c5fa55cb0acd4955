package assets_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/assets"
)

func TestRetentionConfig(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	writeFile(t, root, ".orbit/config.yaml", "retention:\n  runs: {older_than: 30d, keep_per_job: 50}\n  tasks: {older_than: 90d}\n  archive_dir: /var/orbit/archive\n  every: 15m\n  gc_grace: 10m\n")
	c, err := assets.LoadConfig(root)
	require.NoError(t, err)
	r := c.Retention
	assert.True(t, r.Enabled())
	assert.Equal(t, 30*24*time.Hour, r.Runs.OlderThan)
	assert.Equal(t, 50, r.Runs.KeepPerJob)
	assert.Equal(t, 90*24*time.Hour, r.Tasks.OlderThan)
	assert.Equal(t, "/var/orbit/archive", r.Dir(root))
	assert.Equal(t, 15*time.Minute, r.Interval())
	assert.Equal(t, 10*time.Minute, r.CollectGrace())
}

// TestNoRetentionRemovesNothing: without the block the policy is off,
// and its defaults are the documented ones.
func TestNoRetentionRemovesNothing(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	c, err := assets.LoadConfig(root)
	require.NoError(t, err)
	assert.False(t, c.Retention.Enabled())
	assert.Equal(t, root+"/.orbit/archive", c.Retention.Dir(root))
	assert.Equal(t, time.Hour, c.Retention.Interval())
	assert.Equal(t, time.Hour, c.Retention.CollectGrace())
}

func TestRetentionConfigProblems(t *testing.T) {
	t.Parallel()
	tests := []configProblem{
		{"bad duration", "retention:\n  runs:\n    older_than: a month\n",
			`3: retention.runs.older_than: "a month" is not a duration such as 90m, 36h or 30d`},
		{"zero", "retention:\n  tasks: {older_than: 0s}\n",
			`2: retention.tasks.older_than: must be more than 0 (a duration such as 90m, 36h or 30d); leave it out to keep everything`},
		{"keep none", "retention:\n  runs: {keep_per_job: 0}\n",
			`2: retention.runs.keep_per_job: must be ≥ 1 (the finished runs of each job kept); leave it out to keep every run`},
		{"keep words", "retention:\n  runs: {keep_per_job: many}\n",
			`2: retention.runs.keep_per_job: must be an integer, not "many"`},
		{"too often", "retention:\n  every: 5s\n", `2: retention.every: 5s is too often: at least 1m0s`},
		{"bad grace", "retention:\n  runs: {keep_per_job: 5}\n  gc_grace: soon\n",
			`3: retention.gc_grace: "soon" is not a duration such as 90m, 36h or 30d`},
		{"no grace", "retention:\n  gc_grace: 0s\n",
			`2: retention.gc_grace: must be more than 0 (a duration such as 90m, 36h or 30d); a blob stored just before the event that names it needs a grace; leave it out for 1h0m0s`},
		{"unknown", "retention:\n  run: {older_than: 1d}\n", `2: retention.run: unknown key "run" (did you mean "runs"?)`},
		{"negative days", "retention:\n  runs: {older_than: -3d}\n", `2: retention.runs.older_than: "-3d" is not a duration such as 90m, 36h or 30d`},
	}
	checkConfigProblems(t, tests)
}

// FuzzParseConfigRetention: any retention section parses or is refused
// with problems, never a panic, and what parses is within its bounds.
func FuzzParseConfigRetention(f *testing.F) {
	for _, seed := range []string{
		"retention: {runs: {older_than: 30d, keep_per_job: 5}, tasks: {older_than: 36h}, every: 2m}\n",
		"retention: {runs: {older_than: 99999999999d}}\n",
		"retention: {every: 1ns}\n",
		"retention: {gc_grace: -1s}\n",
		"retention: {runs: [1]}\n",
		"retention: {archive_dir: {a: b}}\n",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, doc string) {
		c, err := assets.ParseConfig("c.yaml", []byte(doc))
		if err != nil {
			return
		}
		r := c.Retention
		if r.Runs.OlderThan < 0 || r.Tasks.OlderThan < 0 || r.Runs.KeepPerJob < 0 || (r.Every != 0 && r.Every < time.Minute) || r.GCGrace < 0 {
			t.Fatalf("accepted %+v", r)
		}
	})
}
