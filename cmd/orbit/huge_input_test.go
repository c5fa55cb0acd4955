package main_test

import (
	"bytes"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/orbitrun/orbit/internal/testkit"
)

// TestAHugeJobFileIsReportedInALine: `orbit job run ./big.yaml` of a 10 MB
// file that is not a job (one scalar, random bytes, lines of text, a job
// whose kind or step type is 10 MB long) exits 2 with a short message that
// names the file, never echoing the file.
func TestAHugeJobFileIsReportedInALine(t *testing.T) {
	t.Parallel()
	p := testkit.NewProject(t)
	const size = 10 << 20
	random := make([]byte, size)
	rng := rand.NewChaCha8([32]byte{10})
	_, _ = rng.Read(random)
	huge := strings.Repeat("x", size)
	for name, content := range map[string]string{
		"scalar": huge,
		"random": string(random),
		"lines":  strings.Repeat("the quick brown fox jumps over the lazy dog\n", size/44),
		"kind":   "schemaVersion: 2\nkind: " + huge + "\nmetadata: {name: j}\nspec: {}\n",
		"type":   "schemaVersion: 2\nkind: Job\nmetadata: {name: j}\nspec:\n  steps:\n    - id: a\n      spec: {type: " + huge + "}\n",
		"action": "schemaVersion: 2\nkind: Job\nmetadata: {name: j}\nspec:\n  steps:\n    - id: a\n      spec: {type: deterministic, action: " + huge + ", config: {}}\n",
	} {
		t.Run(name, func(t *testing.T) {
			p.WriteFile(name+".yaml", content)
			cmd := p.Command("job", "run", "./"+name+".yaml")
			cmd.Dir = p.Root
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			assert.Error(t, err)
			assert.Equal(t, 2, cmd.ProcessState.ExitCode(), "%.2000s", stderr.String())
			assert.Empty(t, stdout.String())
			assert.Less(t, stderr.Len(), 1024, "%.2000s", stderr.String())
			assert.Contains(t, stderr.String(), "./"+name+".yaml")
		})
	}
}
