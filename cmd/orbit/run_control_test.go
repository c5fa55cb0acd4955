package main_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/internal/testkit"
	"github.com/orbitrun/orbit/projector"
)

// sideJob has three shell steps that append their names to side.log; the
// second fails until the file ok exists. The third writes what its
// argument says, so a changed job file shows which job a retry ran.
const sideJob = `
schemaVersion: 2
kind: Job
metadata: {name: side}
spec:
  steps:
    - id: one
      spec: {type: shell, program: sh, args: ["-c", "echo one >> side.log"], allowed_programs: [sh]}
    - id: two
      spec: {type: shell, program: sh, args: ["-c", "test -f ok && echo two >> side.log"], allowed_programs: [sh]}
    - id: three
      spec: {type: shell, program: sh, args: ["-c", "echo three >> side.log"], allowed_programs: [sh]}
`

func historyLen(t *testing.T, p *testkit.Project) int {
	t.Helper()
	runs := orbitJSON[[]projector.RunView](t, p, "run", "history", "--json", "-n", "0")
	return len(runs)
}

// TestRunRetryFromAStepUsesThePinnedJob: a run fails at its second step;
// its job file changes; `orbit run retry --from two` runs steps two and
// three of the job as the run pinned it, reuses step one's output, and the
// lineage shows in both runs. Refused retries write nothing.
func TestRunRetryFromAStepUsesThePinnedJob(t *testing.T) {
	t.Parallel()
	p := testkit.NewProject(t)
	jobFile := p.WriteFile(".orbit/jobs/side.yaml", sideJob)
	sideLog := filepath.Join(p.Root, "side.log")

	r := p.Orbit("job", "run", "side")
	require.Equal(t, 1, r.Code, r.String())
	first := strings.TrimSpace(r.Stdout)
	require.Equal(t, []string{"one"}, readLines(t, sideLog))

	runs := historyLen(t, p)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "retry", "01NOSUCHRUN0000000000000000"}, "no run 01NOSUCHRUN0000000000000000"},
		{[]string{"run", "retry", first, "--from", "four"}, "its top-level steps are: one, two, three"},
		{[]string{"run", "retry", first, "--from", "three"}, "step two did not succeed in run " + first},
		{[]string{"run", "retry", first, "--input", "{not json"}, "--input: not valid JSON"},
	} {
		r := p.Orbit(c.args...)
		assert.Equal(t, 2, r.Code, r.String())
		assert.Contains(t, r.Stderr, c.want)
		assert.Empty(t, r.Stdout)
	}
	assert.Equal(t, runs, historyLen(t, p), "a refused retry starts no run")

	// Today's job file says something else; the retry runs the pinned job.
	require.NoError(t, os.WriteFile(jobFile, []byte(strings.ReplaceAll(sideJob, "echo three", "echo changed")), 0o644))
	p.WriteFile("ok", "")
	r = p.Orbit("run", "retry", first, "--from", "two")
	require.Equal(t, 0, r.Code, r.String())
	second := strings.TrimSpace(r.Stdout)
	assert.Len(t, second, 26)
	assert.Contains(t, r.Stderr, "run "+second+" (side) success")
	assert.Equal(t, []string{"one", "two", "three"}, readLines(t, sideLog), "only steps two and three ran again")

	old, retry := runView(t, p, first), runView(t, p, second)
	assert.Equal(t, []string{second}, old.Retries)
	assert.Equal(t, first, retry.RetryOf)
	assert.Equal(t, "two", retry.RetryFrom)
	assert.Equal(t, events.StateSuccess, retry.State)
	require.Len(t, retry.Steps, 3)
	assert.Equal(t, first, retry.Steps[0].ReusedFrom)
	assert.Empty(t, retry.Steps[1].ReusedFrom)

	r = p.Orbit("run", "show", first)
	assert.Regexp(t, `(?m)^Retries:\s+`+second+`$`, r.Stdout)
	r = p.Orbit("run", "show", second)
	assert.Regexp(t, `(?m)^Retry of:\s+`+first+` from two$`, r.Stdout)
	assert.Regexp(t, `(?m)^one\s+success \(reused\)`, r.Stdout)
	r = p.Orbit("run", "history")
	assert.Contains(t, r.Stdout, "retry of "+first+" from two")
	assert.Contains(t, r.Stdout, "retried by "+second)
	r = p.Orbit("run", "trace", second)
	assert.Contains(t, r.Stdout, "retry of "+first+" from two")
	assert.Contains(t, r.Stdout, "reused from "+first)
	r = p.Orbit("run", "trace", first)
	assert.Contains(t, r.Stdout, "retried by: "+second)

	// Detached, the retry prints the new run's id alone.
	r = p.Orbit("run", "retry", second, "--detach")
	require.Equal(t, 0, r.Code, r.String())
	third := strings.TrimSpace(r.Stdout)
	waitFor(t, "the detached retry to finish", func() bool { return events.Terminal(runView(t, p, third).State) })
	assert.Equal(t, []string{"one", "two", "three", "one", "two", "three"}, readLines(t, sideLog))

	r = p.Orbit("replay", "--verify")
	assert.Equal(t, 0, r.Code, r.String())
}
