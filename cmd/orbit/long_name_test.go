package main_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/internal/testkit"
)

// TestAJobWithA10MBNameIsALoadError: `orbit job run` of a job whose
// metadata.name is 10 MB long exits 2 at once with the file, the YAML path
// and the limit, instead of submitting a run whose events cannot be stored
// and waiting for it for ever.
func TestAJobWithA10MBNameIsALoadError(t *testing.T) {
	t.Parallel()
	p := testkit.NewProject(t)
	defer p.StopEngine()
	file := p.WriteFile("long.yaml", "schemaVersion: 2\nkind: Job\nmetadata: {name: "+strings.Repeat("n", 10<<20)+"}\n"+
		"spec:\n  steps:\n    - {id: a, spec: {type: deterministic, action: echo}}\n")
	start := time.Now()
	r := p.Orbit("job", "run", file)
	require.Equal(t, 2, r.Code, "%.2000s", r.String())
	assert.Less(t, time.Since(start), 30*time.Second)
	assert.Contains(t, r.Stderr, file+":3: metadata.name: ")
	assert.Contains(t, r.Stderr, "(10485760 bytes) is longer than a name may be (128 bytes)")
	assert.Less(t, len(r.Stderr), 1024)
	assert.Empty(t, r.Stdout)
}
