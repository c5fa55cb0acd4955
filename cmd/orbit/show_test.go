package main_test

import (
	"encoding/json"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/assets"
	"github.com/orbitrun/orbit/internal/testkit"
)

// TestShowPrintsTheAssetAsWritten: `job show`, `activity show` and
// `executor show` print the file an asset was loaded from byte for byte,
// comments included, and say on stderr where it came from; --json prints
// the loaded asset.
func TestShowPrintsTheAssetAsWritten(t *testing.T) {
	t.Parallel()
	p := testkit.NewProject(t)
	for _, tc := range []struct{ kind, name, file string }{
		{"job", "hello", "jobs/hello.yaml"},
		{"activity", "shell_reference", "activities/shell_reference.yaml"},
		{"executor", "codex", "executors/codex.yaml"},
	} {
		want, err := assets.SeededFile(tc.file)
		require.NoError(t, err)
		r := p.Orbit(tc.kind, "show", tc.name)
		require.Equal(t, 0, r.Code, "%s show %s: %s", tc.kind, tc.name, r)
		assert.Equal(t, string(want), r.Stdout, "%s show %s", tc.kind, tc.name)
		assert.True(t, strings.HasPrefix(r.Stdout, "#"), "the comments are kept")
		assert.Equal(t, "orbit: "+tc.kind+" "+tc.name+": seeded:"+tc.file+" (layer seeded)\n", r.Stderr)

		r = p.Orbit("--json", tc.kind, "show", tc.name)
		require.Equal(t, 0, r.Code, r.String())
		var loaded struct{ Name, Source, Layer string }
		require.NoError(t, json.Unmarshal([]byte(r.Stdout), &loaded), r.Stdout)
		assert.Equal(t, tc.name, loaded.Name)
		assert.Equal(t, "seeded:"+tc.file, loaded.Source)
		assert.Equal(t, "seeded", loaded.Layer)
	}
}

// TestShowUnknownNameListsWhatExists: a name no layer defines is exit 2,
// and the message names the assets of that kind there are.
func TestShowUnknownNameListsWhatExists(t *testing.T) {
	t.Parallel()
	p := testkit.NewProject(t)
	for kind, known := range map[string]string{"job": "hello", "activity": "shell_reference", "executor": "claude"} {
		r := p.Orbit(kind, "show", "nope")
		assert.Equal(t, 2, r.Code, "%s: %s", kind, r)
		assert.Empty(t, r.Stdout, kind)
		assert.Contains(t, r.Stderr, `no `+kind+` named "nope"; the `, kind)
		assert.Contains(t, r.Stderr, known, kind)
	}
	r := p.Orbit("executor", "show")
	assert.Equal(t, 2, r.Code, r.String())
}

// TestExecutorList lists the seeded executors like job list and activity
// list list theirs.
func TestExecutorList(t *testing.T) {
	t.Parallel()
	p := testkit.NewProject(t)
	r := p.Orbit("executor", "list")
	require.Equal(t, 0, r.Code, r.String())
	assert.Regexp(t, `(?m)^claude\s+claude_code\s+seeded\s+seeded:executors/claude.yaml\s`, r.Stdout)
	assert.Regexp(t, `(?m)^codex\s+codex\s+seeded\s+seeded:executors/codex.yaml\s`, r.Stdout)

	list := orbitJSON[[]assets.Entry](t, p, "--json", "executor", "list")
	var names []string
	for _, e := range list {
		names = append(names, e.Name)
	}
	assert.Equal(t, []string{"claude", "codex"}, names)
}

// TestCopyASeededExampleWithShow follows docs/jobs.md: print a seeded job
// with `job show`, save it under .orbit/jobs/ with another name, and run
// the copy; `job show` of the copy names its file.
func TestCopyASeededExampleWithShow(t *testing.T) {
	t.Parallel()
	p := testkit.NewProject(t)
	defer p.StopEngine()
	r := p.Orbit("job", "show", "example_when")
	require.Equal(t, 0, r.Code, r.String())
	copied := strings.Replace(r.Stdout, "name: example_when", "name: my_when", 1)
	require.NotEqual(t, r.Stdout, copied)
	path := p.WriteFile(".orbit/jobs/my_when.yaml", copied)

	r = p.Orbit("job", "show", "my_when")
	require.Equal(t, 0, r.Code, r.String())
	assert.Equal(t, copied, r.Stdout)
	assert.Equal(t, "orbit: job my_when: "+path+" (layer workspace)\n", r.Stderr)

	r = p.Orbit("job", "run", "my_when")
	assert.Equal(t, 0, r.Code, r.String())

	// The same name shadows the seeded job, and show says so.
	p.WriteFile(".orbit/jobs/hello.yaml", strings.Replace(copied, "name: my_when", "name: hello", 1))
	r = p.Orbit("job", "show", "hello")
	require.Equal(t, 0, r.Code, r.String())
	assert.Equal(t, "orbit: job hello: "+filepath.Join(p.Root, ".orbit", "jobs", "hello.yaml")+" (layer workspace), shadowing seeded:jobs/hello.yaml\n", r.Stderr)
}

// TestRunShowListsParallelBranchesInTheJobsOrder: run show lists the
// branches of a parallel step as the job lists them (they were listed
// last-first, most often).
func TestRunShowListsParallelBranchesInTheJobsOrder(t *testing.T) {
	t.Parallel()
	p := testkit.NewProject(t)
	p.WriteFile(".orbit/jobs/par.yaml", `
schemaVersion: 2
kind: Job
metadata: {name: par}
spec:
  steps:
    - id: both
      parallel:
        branches:
          - {id: a, spec: {type: shell, program: sh, args: ["-c", "echo a"], allowed_programs: [sh]}}
          - {id: b, spec: {type: shell, program: sh, args: ["-c", "echo b"], allowed_programs: [sh]}}
          - {id: c, spec: {type: shell, program: sh, args: ["-c", "echo c"], allowed_programs: [sh]}}
`)
	r := p.Orbit("job", "run", "par")
	require.Equal(t, 0, r.Code, r.String())
	r = p.Orbit("run", "show")
	require.Equal(t, 0, r.Code, r.String())
	assert.Equal(t, []string{"both", "both/a", "both/b", "both/c"}, regexp.MustCompile(`(?m)^both\S*`).FindAllString(r.Stdout, -1))
}
