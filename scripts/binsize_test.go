package scripts_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/internal/testkit"
)

// TestMakeBuildAfterBinsizeIsQuiet: make binsize passes (no reachable
// reflect method lookup, the binary within its size), and a make build
// after it, which finds its binary up to date, prints its command alone:
// not the listing of every reachable symbol that the check's link wrote.
func TestMakeBuildAfterBinsizeIsQuiet(t *testing.T) {
	if testing.Short() {
		t.Skip("links cmd/orbit")
	}
	root := testkit.ModuleRoot(t)
	bin := filepath.Join(t.TempDir(), "orbit")
	var env []string
	for _, kv := range os.Environ() {
		// A make above this test (make test) must not lend this one its
		// jobserver or its level.
		if !strings.HasPrefix(kv, "MAKEFLAGS=") && !strings.HasPrefix(kv, "MFLAGS=") && !strings.HasPrefix(kv, "MAKELEVEL=") {
			env = append(env, kv)
		}
	}
	run := func(target string) []string {
		cmd := exec.Command("make", "--no-print-directory", "-C", root, target, "BIN="+bin)
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		lines := strings.Split(strings.TrimSpace(string(out)), "\n")
		require.NoError(t, err, "make %s:\n%s", target, strings.Join(lines[max(0, len(lines)-20):], "\n"))
		return lines
	}

	assert.Contains(t, strings.Join(run("binsize"), "\n"), "binsize: no reachable reflect method lookup")
	out := run("build")
	assert.Len(t, out, 1, "make build printed more than its command; its first lines:\n%s", strings.Join(out[:min(len(out), 5)], "\n"))
	assert.True(t, strings.HasPrefix(out[0], "go build "), "make build's first line: %s", out[0])
}
