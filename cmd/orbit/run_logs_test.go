package main_test

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/internal/testkit"
)

// logsJob prints more than a preview holds: a step that succeeds, two
// iterations of a loop, and a step that fails.
const logsJob = `
schemaVersion: 2
kind: Job
metadata: {name: noisy}
spec:
  steps:
    - id: ok
      spec: {type: shell, program: sh, args: ["-c", "seq 1 300; echo warn >&2"], allowed_programs: [sh]}
    - id: twice
      loop:
        max_iterations: 2
        steps:
          - {id: say, spec: {type: shell, program: sh, args: ["-c", "echo iteration {{ iteration }}"], allowed_programs: [sh]}}
    - id: bad
      spec: {type: shell, program: sh, args: ["-c", "seq 1000 1400; seq 1 200 >&2; exit 3"], allowed_programs: [sh]}
`

// seq is what seq(1) prints from from to to.
func seq(from, to int) string {
	var b strings.Builder
	for i := from; i <= to; i++ {
		b.WriteString(strconv.Itoa(i) + "\n")
	}
	return b.String()
}

// TestRunLogsPrintsWhatAStepWrote: orbit run logs -s prints a step's
// streams whole and raw, the failed step's included (its output is kept
// as a blob when the preview does not hold it); without -s every process
// under a header; -s of a loop the processes under it. A step that ran no
// process is exit 2.
func TestRunLogsPrintsWhatAStepWrote(t *testing.T) {
	t.Parallel()
	p := testkit.NewProject(t)
	p.WriteFile(".orbit/jobs/noisy.yaml", logsJob)
	r := p.Orbit("job", "run", "noisy")
	require.Equal(t, 1, r.Code, r.String())
	id := strings.TrimSpace(r.Stdout)

	r = p.Orbit("run", "logs", id, "-s", "ok")
	require.Equal(t, 0, r.Code, r.String())
	assert.Equal(t, seq(1, 300), r.Stdout)
	assert.Equal(t, "warn\n", r.Stderr)
	r = p.Orbit("run", "logs", id, "-s", "bad")
	require.Equal(t, 0, r.Code, r.String())
	assert.Equal(t, seq(1000, 1400), r.Stdout, "a failed step's stdout, whole")
	assert.Equal(t, seq(1, 200), r.Stderr)

	r = p.Orbit("run", "logs", id)
	require.Equal(t, 0, r.Code, r.String())
	for _, h := range []string{"==> ok (attempt 1): stdout, 1092 bytes <==\n1\n", "==> ok (attempt 1): stderr, 5 bytes <==\nwarn\n",
		"==> twice/1/say (attempt 1): stdout, 12 bytes <==\niteration 1\n", "==> twice/2/say (attempt 1): stdout",
		"==> bad (attempt 1): stdout, 2005 bytes <==\n1000\n", "==> bad (attempt 1): stderr, 692 bytes <==\n1\n"} {
		assert.Contains(t, r.Stdout, h)
	}
	r = p.Orbit("run", "logs", id, "-s", "twice")
	require.Equal(t, 0, r.Code, r.String())
	assert.Equal(t, "==> twice/1/say (attempt 1): stdout, 12 bytes <==\niteration 1\n==> twice/2/say (attempt 1): stdout, 12 bytes <==\niteration 2\n", r.Stdout)

	r = p.Orbit("run", "logs", id, "-s", "bad", "--json")
	require.Equal(t, 0, r.Code, r.String())
	var procs []struct {
		StepKey, Event, Stdout, Stderr string
		Attempt                        int
	}
	require.NoError(t, json.Unmarshal([]byte(r.Stdout), &procs))
	require.Len(t, procs, 1)
	assert.Equal(t, "shell.exited", procs[0].Event)
	assert.Equal(t, seq(1000, 1400), procs[0].Stdout)

	r = p.Orbit("run", "logs", id, "-s", "nope")
	assert.Equal(t, 2, r.Code, r.String())
	assert.Contains(t, r.Stderr, "run "+id+" has no step \"nope\"")
}

// TestRunShorthandRefusesWhatLooksLikeASubcommand: 'orbit run <job>' does
// not run a job whose name is a typo or a prefix of a run subcommand; it
// names the subcommand and the long form.
func TestRunShorthandRefusesWhatLooksLikeASubcommand(t *testing.T) {
	t.Parallel()
	p := testkit.NewProject(t)
	p.WriteFile(".orbit/jobs/histroy.yaml", "schemaVersion: 2\nkind: Job\nmetadata: {name: histroy}\nspec:\n  steps:\n    - {id: a, spec: {type: deterministic, action: echo}}\n")
	r := p.Orbit("run", "histroy")
	assert.Equal(t, 2, r.Code, r.String())
	assert.Contains(t, r.Stderr, `"histroy" looks like the subcommand history, not a job: did you mean 'orbit run history'? (To run a job named histroy: orbit job run histroy)`)
	assert.Empty(t, r.Stdout, "nothing ran")
	r = p.Orbit("run", "log", "01NOSUCHRUN0000000000000000")
	assert.Equal(t, 2, r.Code, r.String())
	assert.Contains(t, r.Stderr, "looks like the subcommand logs")
	r = p.Orbit("job", "run", "histroy")
	assert.Equal(t, 0, r.Code, r.String())
	// list and ls are history's other names, as in the other lists.
	for _, name := range []string{"list", "ls"} {
		r = p.Orbit("run", name)
		assert.Equal(t, 0, r.Code, r.String())
		assert.Contains(t, r.Stdout, "histroy", "orbit run %s lists the runs", name)
	}
	r = p.Orbit("run", "lsit")
	assert.Equal(t, 2, r.Code, r.String())
	assert.Contains(t, r.Stderr, "looks like the subcommand list")
}
