package routine_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/assets"
	"github.com/orbitrun/orbit/routine"
)

const nightly = `schemaVersion: 2
kind: Routine
metadata:
  name: nightly
spec:
  trigger:
    cron: "0 3 * * *"
    missed_run: catch_up_once
  target: job:build
  input:
    branch: main
  policy:
    timeout_minutes: 30
    retries: {max: 2, backoff_minutes: 5}
    overlap: allow
`

func TestParseReadsTheUpstreamSchema(t *testing.T) {
	r, err := routine.Parse("nightly.yaml", []byte(nightly))
	require.NoError(t, err)
	assert.Equal(t, "nightly", r.Name)
	assert.Equal(t, "0 3 * * *", r.Cron)
	assert.Equal(t, routine.CatchUpOnce, r.MissedRun)
	assert.Equal(t, "build", r.Job)
	assert.Equal(t, map[string]any{"branch": "main"}, r.Input)
	assert.Equal(t, 30, r.TimeoutMinutes)
	assert.Equal(t, 2, r.Retries)
	assert.Equal(t, 5, r.BackoffMinutes)
	assert.Equal(t, routine.Allow, r.Overlap)
	require.NotNil(t, r.Schedule())

	r, err = routine.Parse("min.yaml", []byte("schemaVersion: 2\nkind: Routine\nmetadata: {name: m}\nspec:\n  trigger: {cron: '* * * * *'}\n  target: job:x\n"))
	require.NoError(t, err)
	assert.Equal(t, routine.Skip, r.MissedRun, "the default")
	assert.Equal(t, routine.Forbid, r.Overlap, "the default")
}

// TestParseNamesFileLineAndPath: each problem says where it is and what
// was expected, all of them at once.
func TestParseNamesFileLineAndPath(t *testing.T) {
	bad := `schemaVersion: 2
kind: Routine
metadata:
  name: "bad name"
spec:
  trigger:
    cron: "61 * * * *"
    missed_run: later
  target: build
  input: [1]
  policy:
    overlap: sometimes
    timeout_minutes: -3
    retry: 1
`
	_, err := routine.Parse("r.yaml", []byte(bad))
	require.Error(t, err)
	assert.ErrorIs(t, err, assets.ErrInvalid)
	for _, want := range []string{
		`r.yaml:4: metadata.name: "bad name": want letters`,
		`r.yaml:7: spec.trigger.cron: cron "61 * * * *": minute: "61" is not a number from 0 to 59`,
		`r.yaml:8: spec.trigger.missed_run: "later": want catch_up_once or skip`,
		`r.yaml:9: spec.target: "build": want job:<name>`,
		`r.yaml:10: spec.input: must be a mapping`,
		`r.yaml:12: spec.policy.overlap: "sometimes": want forbid or allow`,
		`r.yaml:13: spec.policy.timeout_minutes: must be a whole number from 1 to`,
		`r.yaml:14: spec.policy.retry: unknown key`,
	} {
		assert.Contains(t, err.Error(), want)
	}
	_, err = routine.Parse("e.yaml", []byte("kind: Job\n"))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "e.yaml:1: kind: is required and must be Routine")
}

// TestLoadLeavesOutABrokenFile: one bad file stops only itself, and a name
// two files define is neither's.
func TestLoadLeavesOutABrokenFile(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, routine.Dir)
	require.NoError(t, os.MkdirAll(dir, 0o755))
	write := func(name, body string) {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644))
	}
	write("nightly.yaml", nightly)
	write("broken.yaml", "schemaVersion: 2\nkind: Routine\n")
	write("twin1.yml", "schemaVersion: 2\nkind: Routine\nmetadata: {name: twin}\nspec: {trigger: {cron: '@daily'}, target: 'job:x'}\n")
	write("twin2.yaml", "schemaVersion: 2\nkind: Routine\nmetadata: {name: twin}\nspec: {trigger: {cron: '@daily'}, target: 'job:x'}\n")
	write(".hidden.yaml", "not: read")
	write("notes.txt", "not read")
	list, err := routine.Load(root)
	var bad *assets.Error
	require.True(t, errors.As(err, &bad), "%v", err)
	require.Len(t, list, 1)
	assert.Equal(t, "nightly", list[0].Name)
	assert.Contains(t, err.Error(), "broken.yaml")
	assert.Contains(t, err.Error(), `"twin" is also defined in`)
}

// FuzzParse: no input makes the parser panic, and what it accepts has a
// name, a job and a schedule.
func FuzzParse(f *testing.F) {
	f.Add([]byte(nightly))
	f.Add([]byte("schemaVersion: 2\nkind: Routine\nmetadata: {name: m}\nspec: {trigger: {cron: '*/5 * * * * *'}, target: 'job:x'}\n"))
	f.Add([]byte("a: &x [*x]"))
	f.Add([]byte("---\n---\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := routine.Parse("f.yaml", data)
		if err != nil {
			assert.ErrorIs(t, err, assets.ErrInvalid)
			return
		}
		assert.NotEmpty(t, r.Name)
		assert.NotEmpty(t, r.Job)
		assert.NotNil(t, r.Schedule())
	})
}

// TestTheScaffoldedRoutinesDirectory: orbit init's .orbit/routines/ holds
// no routine (its README is not read as one), and the example its README
// shows loads once written to a file of its own.
func TestTheScaffoldedRoutinesDirectory(t *testing.T) {
	readme, ok := assets.Scaffold()["routines/README.md"]
	require.True(t, ok)
	root := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(root, routine.Dir), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(root, routine.Dir, "README.md"), readme, 0o644))
	list, err := routine.Load(root)
	require.NoError(t, err)
	assert.Empty(t, list)

	_, rest, ok := strings.Cut(string(readme), "```yaml\n")
	require.True(t, ok)
	example, _, ok := strings.Cut(rest, "```")
	require.True(t, ok)
	require.NoError(t, os.WriteFile(filepath.Join(root, routine.Dir, "nightly.yaml"), []byte(example), 0o644))
	list, err = routine.Load(root)
	require.NoError(t, err)
	require.Len(t, list, 1)
	assert.Equal(t, "example", list[0].Job)
	assert.Equal(t, 2, list[0].Retries)
}
