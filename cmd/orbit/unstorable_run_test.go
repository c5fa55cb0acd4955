package main_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/internal/testkit"
)

const echoInputJob = `
schemaVersion: 2
kind: Job
metadata: {name: echo_input}
spec:
  steps:
    - id: echo
      spec: {type: deterministic, action: echo, config: {text: "{{ input.text }}"}}
`

// TestARunTooLargeToRecordIsRefusedBeforeItHasAnID: through the binary, on
// a cluster whose servers take 128 KiB messages (under the 256 KiB an event
// keeps inline). The largest --input whose runs.submit request the server
// takes is found by halving; from there down, every input is either a run
// that is recorded (exit 0, and run show finds it) or, while its
// run.requested (the request plus the event's envelope) is over the
// limit, refused by the engine with exit 2, naming the size and the limit,
// and no run id. Before, such inputs failed sending the engine's command
// (exit 1, "event log unavailable") or got an id that run show did not
// know: the size check left out the headers the publish adds, and the
// server refused the event for ever.
func TestARunTooLargeToRecordIsRefusedBeforeItHasAnID(t *testing.T) {
	t.Parallel()
	const maxPayload = 128 << 10
	c := testkit.StartClusterWith(t, filepath.Join(t.TempDir(), "creds"), maxPayload)
	p := testkit.ClusterProject(t, c, filepath.Join(t.TempDir(), "log.key"))
	p.WriteFile(".orbit/jobs/echo_input.yaml", echoInputJob)
	testkit.StartEngine(t, p)

	input := filepath.Join(t.TempDir(), "input.json")
	try := func(n int) testkit.Result {
		t.Helper()
		require.NoError(t, os.WriteFile(input, []byte(fmt.Sprintf(`{"text":%q}`, strings.Repeat("a", n))), 0o644))
		return p.Orbit("job", "run", "echo_input", "--detach", "--input", "@"+input)
	}
	r := try(1000)
	require.Equal(t, 0, r.Code, r.String())
	// lo: a request the server takes; hi: one it does not.
	lo, hi := 1000, maxPayload
	for hi-lo > 1 {
		mid := (lo + hi) / 2
		if r = try(mid); r.Code == 2 && strings.Contains(r.Stderr, "request is") {
			hi = mid
		} else {
			lo = mid
		}
	}
	refused := 0
	for n := lo; n > lo-4000; n -= 100 {
		r = try(n)
		if r.Code == 0 {
			id := strings.TrimSpace(r.Stdout)
			waitForLong(t, "run "+id+" in the views", func() bool { return p.Orbit("run", "show", "--json", id).Code == 0 })
			break
		}
		refused++
		require.Equal(t, 2, r.Code, "input of %d bytes: %s", n, r)
		assert.Empty(t, strings.TrimSpace(r.Stdout), "a run id was given")
		assert.Contains(t, r.Stderr, fmt.Sprintf("over the server's max_payload of %d bytes", maxPayload))
		assert.Contains(t, r.Stderr, "run.requested of ")
	}
	assert.Positive(t, refused, "no input was refused")
}
