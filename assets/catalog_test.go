package assets_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/assets"
)

// writeFile writes content to rel under root, creating directories.
func writeFile(t *testing.T, root, rel, content string) string {
	t.Helper()
	p := filepath.Join(root, filepath.FromSlash(rel))
	require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
	require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
	return p
}

// openStrict opens a catalog and returns the problems of the files it left
// out as its error.
func openStrict(root string, opts assets.CatalogOptions) (*assets.Catalog, error) {
	c, err := assets.OpenCatalog(root, opts)
	if err != nil {
		return nil, err
	}
	return c, c.Err()
}

func activityYAML(name, program string) string {
	return "schemaVersion: 2\nkind: Activity\nmetadata: {name: " + name + ", description: " + program + " things}\n" +
		"spec: {type: shell, program: " + program + ", allowed_programs: [" + program + "]}\n"
}

func jobYAML(name, target string) string {
	return "schemaVersion: 2\nkind: Job\nmetadata: {name: " + name + "}\n" +
		"spec:\n  steps:\n    - {id: a, target: activity:" + target + "}\n"
}

func TestCatalogSeededOnly(t *testing.T) {
	t.Parallel()
	c := seeded(t)
	jobs := c.Jobs()
	require.NotEmpty(t, jobs)
	executors := c.Executors()
	require.NotEmpty(t, executors)
	for _, e := range append(append(jobs, c.Activities()...), executors...) {
		assert.Equal(t, assets.LayerSeeded, e.Layer, e.Name)
		assert.Regexp(t, `^seeded:(jobs|activities|executors)/[a-z_]+\.yaml$`, e.Source)
		assert.NotEmpty(t, e.Description, e.Name)
		assert.Empty(t, e.Shadows)
	}
	hello, err := c.Job("hello")
	require.NoError(t, err)
	assert.Equal(t, "seeded:jobs/hello.yaml", hello.Source)
	assert.Equal(t, assets.LayerSeeded, hello.Layer)
}

func TestCatalogLayers(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	env := t.TempDir()
	ws := writeFile(t, root, ".orbit/activities/shell_reference.yaml", activityYAML("shell_reference", "printf"))
	writeFile(t, root, ".orbit/activities/mine.yml", activityYAML("mine", "ls"))
	writeFile(t, root, ".orbit/activities/README.md", "not an asset")
	writeFile(t, root, ".orbit/activities/described.yaml", "schemaVersion: 2\nkind: Activity\nmetadata: {name: spec_described}\n"+
		"spec: {type: shell, description: Lists files., program: ls, allowed_programs: [ls]}\n")
	writeFile(t, root, ".orbit/activities/nested/ignored.yaml", "not: read")
	wsJob := writeFile(t, root, ".orbit/jobs/hello.yaml", jobYAML("hello", "mine"))
	envJob := writeFile(t, env, "jobs/hello.yaml", jobYAML("hello", "shell_reference"))
	envAct := writeFile(t, env, "acts/mine.yaml", activityYAML("mine", "cat"))

	c, err := assets.OpenCatalog(root, assets.CatalogOptions{ActivityDir: filepath.Join(env, "acts"), JobDir: filepath.Join(env, "jobs")})
	require.NoError(t, err)

	// First match wins: env, then workspace, then seeded.
	hello, err := c.Job("hello")
	require.NoError(t, err)
	assert.Equal(t, assets.LayerEnv, hello.Layer)
	assert.Equal(t, envJob, hello.Source)
	// Targets resolve across the whole catalog: the workspace shell_reference
	// shadows the seeded one.
	assert.Equal(t, "printf", hello.Spec.Steps[0].Activity.Program)

	mine, err := c.Activity("mine")
	require.NoError(t, err)
	assert.Equal(t, assets.LayerEnv, mine.Layer)
	assert.Equal(t, "cat", mine.Spec.Program)

	// The seeded job hello is shadowed, but it was loaded (and resolved
	// against the whole catalog) all the same.
	jobs := c.Jobs()
	byName := map[string]assets.Entry{}
	for _, e := range jobs {
		byName[e.Name] = e
	}
	assert.Equal(t, assets.Entry{Name: "hello", Kind: "workflow", Source: envJob, Layer: assets.LayerEnv,
		Shadows: []string{wsJob, "seeded:jobs/hello.yaml"}}, byName["hello"])

	acts := c.Activities()
	var names []string
	for _, e := range acts {
		names = append(names, e.Name)
	}
	assert.IsIncreasing(t, names)
	actBy := map[string]assets.Entry{}
	for _, e := range acts {
		actBy[e.Name] = e
	}
	assert.Equal(t, assets.Entry{Name: "shell_reference", Kind: "shell", Description: "printf things", Source: ws,
		Layer: assets.LayerWorkspace, Shadows: []string{"seeded:activities/shell_reference.yaml"}}, actBy["shell_reference"])
	assert.Equal(t, []string{filepath.Join(root, ".orbit", "activities", "mine.yml")}, actBy["mine"].Shadows)
	assert.Equal(t, envAct, actBy["mine"].Source)
	// Description is metadata.description, else the spec's description.
	assert.Equal(t, "Greets input.name with the echo action; shows how config is templated.", actBy["deterministic_reference"].Description)
	assert.Equal(t, "Lists files.", actBy["spec_described"].Description)
}

func TestCatalogNotFound(t *testing.T) {
	t.Parallel()
	c := seeded(t)
	_, err := c.Job("nope")
	require.ErrorIs(t, err, assets.ErrNotFound)
	assert.EqualError(t, err, `no job "nope" (orbit job list lists the jobs)`)
	_, err = c.Activity("nope")
	require.ErrorIs(t, err, assets.ErrNotFound)
	assert.EqualError(t, err, `no activity "nope" (orbit activity list lists the activities)`)
}

func TestCatalogDuplicateInOneLayer(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	a := writeFile(t, root, ".orbit/jobs/a.yaml", jobYAML("same", "shell_reference"))
	b := writeFile(t, root, ".orbit/jobs/b.yaml", jobYAML("same", "shell_reference"))
	_, err := openStrict(root, assets.CatalogOptions{})
	require.ErrorIs(t, err, assets.ErrInvalid)
	assert.EqualError(t, err, b+`:3: metadata.name: job "same" is defined twice in the workspace layer: `+a+" and "+b)
}

func TestCatalogReportsEveryBadFile(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	act := writeFile(t, root, ".orbit/activities/bad.yaml", "schemaVersion: 2\nkind: Activity\nmetadata: {name: bad}\nspec: {type: shel}\n")
	job := writeFile(t, root, ".orbit/jobs/bad.yaml", jobYAML("bad", "missing"))
	_, err := openStrict(root, assets.CatalogOptions{})
	require.ErrorIs(t, err, assets.ErrInvalid)
	assert.EqualError(t, err, act+`:4: spec.type: "shel" is not one of shell, deterministic, agent_loop, groundhog (did you mean "shell"?)`+"\n"+
		job+`:6: spec.steps[0].target: unknown activity "missing"`)
}

func TestCatalogOptionsBackend(t *testing.T) {
	t.Parallel()
	_, err := openStrict(t.TempDir(), assets.CatalogOptions{Backend: "grpc"})
	require.ErrorIs(t, err, assets.ErrInvalid)
	assert.EqualError(t, err, `backend "grpc" is not one of http, cli, auto`)
}

func TestCatalogUnreadableDir(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	// A file where a directory should be is an I/O error, not a validation one.
	writeFile(t, root, ".orbit/jobs", "")
	_, err := openStrict(root, assets.CatalogOptions{})
	require.Error(t, err)
	assert.NotErrorIs(t, err, assets.ErrInvalid)
}

func TestCatalogJobFile(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	writeFile(t, root, ".orbit/activities/mine.yaml", activityYAML("mine", "ls"))
	c, err := assets.OpenCatalog(root, assets.CatalogOptions{})
	require.NoError(t, err)

	file := writeFile(t, t.TempDir(), "adhoc.yaml", jobYAML("adhoc", "mine"))
	j, err := c.JobFile(file)
	require.NoError(t, err)
	assert.Equal(t, assets.LayerFile, j.Layer)
	assert.Equal(t, file, j.Source)
	assert.Equal(t, "ls", j.Spec.Steps[0].Activity.Program)
	_, err = c.Job("adhoc")
	require.ErrorIs(t, err, assets.ErrNotFound, "a job file does not join the catalog")

	bad := writeFile(t, t.TempDir(), "bad.yaml", jobYAML("bad", "nope"))
	_, err = c.JobFile(bad)
	assert.EqualError(t, err, bad+`:6: spec.steps[0].target: unknown activity "nope"`)

	_, err = c.JobFile(filepath.Join(root, "missing.yaml"))
	require.ErrorIs(t, err, fs.ErrNotExist)
}

func TestCatalogDisabledJobLoads(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	writeFile(t, root, ".orbit/jobs/off.yaml", "schemaVersion: 2\nkind: Job\nmetadata: {name: off}\nspec:\n  state: disabled\n  steps: [{id: a, spec: {type: deterministic, action: echo}}]\n")
	c, err := assets.OpenCatalog(root, assets.CatalogOptions{})
	require.NoError(t, err)
	j, err := c.Job("off")
	require.NoError(t, err)
	assert.Equal(t, "disabled", j.Spec.State)
}

// TestABrokenFileStopsOnlyItself: the rest of the catalog loads; asking for
// the broken job gives its problems; dotfiles and editor backups are not
// read at all.
func TestABrokenFileStopsOnlyItself(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	bad := writeFile(t, root, ".orbit/jobs/bad.yaml", jobYAML("bad", "missing"))
	writeFile(t, root, ".orbit/jobs/good.yaml", jobYAML("good", "shell_reference"))
	garbage := writeFile(t, root, ".orbit/jobs/garbage.yaml", "{{{ not yaml")
	writeFile(t, root, ".orbit/jobs/.hidden.yaml", "not: [a job")
	writeFile(t, root, ".orbit/jobs/good.yaml~", "not: [a job")
	writeFile(t, root, ".orbit/jobs/#good.yaml#", "not: [a job")

	c, err := assets.OpenCatalog(root, assets.CatalogOptions{})
	require.NoError(t, err)
	for _, name := range []string{"good", "hello"} {
		_, err := c.Job(name)
		assert.NoError(t, err, name)
	}
	_, err = c.Job("bad")
	require.ErrorIs(t, err, assets.ErrInvalid)
	assert.EqualError(t, err, bad+`:6: spec.steps[0].target: unknown activity "missing"`)
	_, err = c.Job("nowhere")
	require.ErrorIs(t, err, assets.ErrNotFound)
	assert.Contains(t, err.Error(), "some catalog files could not be loaded")

	require.Len(t, c.Problems(), 2)
	assert.Equal(t, bad, c.Problems()[0].File, "in file name order")
	assert.Equal(t, garbage, c.Problems()[1].File)
	var names []string
	for _, e := range c.Jobs() {
		names = append(names, e.Name)
	}
	assert.Contains(t, names, "good")
	assert.NotContains(t, names, "bad")
}

// TestAProblemQuotesAHugeValueShort: a catalog file that is one 1 MB
// scalar is reported in a line, not echoed whole.
func TestAProblemQuotesAHugeValueShort(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	file := writeFile(t, root, ".orbit/jobs/junk.yaml", strings.Repeat("x", 1<<20))
	c, err := assets.OpenCatalog(root, assets.CatalogOptions{})
	require.NoError(t, err)
	require.Len(t, c.Problems(), 1)
	msg := c.Problems()[0].String()
	assert.Less(t, len(msg), 400, msg)
	assert.Contains(t, msg, file)
	assert.Contains(t, msg, "(1048576 bytes)")
}
