package main_test

import (
	"flag"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/internal/testkit"
	"github.com/orbitrun/orbit/projector"
)

var update = flag.Bool("update", false, "rewrite golden files")

// applied returns how many events the engine's views have applied, which
// equals the length of the log after a replay check.
func applied(t *testing.T, p *testkit.Project) uint64 {
	t.Helper()
	rep := orbitJSON[projector.ReplayReport](t, p, "replay", "--verify", "--json")
	return rep.Applied
}

// TestBadInputFailsBeforeAnythingRuns runs every file in testdata/bad and a
// few bad command lines: each must exit 2 with a message naming the file,
// the YAML path and the reason (compared with testdata/bad_input.golden),
// and must leave the log exactly as it was.
func TestBadInputFailsBeforeAnythingRuns(t *testing.T) {
	t.Parallel()
	p := testkit.NewProject(t)
	require.Equal(t, 0, p.Orbit("job", "run", "hello").Code)
	before := applied(t, p)

	files, err := filepath.Glob("testdata/bad/*.yaml")
	require.NoError(t, err)
	sort.Strings(files)
	cases := [][]string{}
	for _, f := range files {
		abs, err := filepath.Abs(f)
		require.NoError(t, err)
		cases = append(cases, []string{"job", "run", abs})
	}
	cases = append(cases,
		[]string{"job", "run", "no_such_job"},
		[]string{"job", "run", "hello", "--input", "{not json"},
		[]string{"job", "run", "hello", "--input", "@/nonexistent/input.json"},
		[]string{"job", "run", "hello", "--input", "42"},
		[]string{"job", "run", "hello", "--input", "[]"},
		[]string{"job", "run", "hello", "--input", "null"},
		[]string{"run", "hello", "--input", `"s"`},
		[]string{"run", "retry", "01NOSUCHRUN0000000000000000", "--input", "[1]"},
		[]string{"job", "run"},
		[]string{"job", "run", "hello", "--no-such-flag"},
	)

	var got strings.Builder
	wd, _ := os.Getwd()
	for _, args := range cases {
		r := p.Orbit(args...)
		assert.Equal(t, 2, r.Code, "%v\n%s", args, r)
		assert.Empty(t, r.Stdout, "%v prints no run id", args)
		msg := strings.ReplaceAll(r.Stderr, filepath.Join(wd, "testdata"), "testdata")
		got.WriteString("$ orbit " + strings.Join(args, " ") + "\n" + msg + "\n")
	}
	golden := filepath.Join("testdata", "bad_input.golden")
	text := strings.ReplaceAll(got.String(), filepath.Join(wd, "testdata"), "testdata")
	if *update {
		require.NoError(t, os.WriteFile(golden, []byte(text), 0o644))
	}
	want, err := os.ReadFile(golden)
	require.NoError(t, err)
	assert.Equal(t, string(want), text)

	assert.Equal(t, before, applied(t, p), "bad input must not change the log")
}
