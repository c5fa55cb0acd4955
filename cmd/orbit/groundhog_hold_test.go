package main_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/internal/testkit"
)

// TestAnApprovalKilledMidWayHoldsTheWorkspaceBriefly: the engine is killed
// (the failpoint's kill -9 of itself) in the middle of an approval, after
// its fast-forward, holding the task's workspace. The hold it can no longer
// renew is there when a restarted engine is asked to approve again
// ("held by run approve-…"), and is taken over once its 30 s run out, not
// after minutes: the next approval records the one cut short.
func TestAnApprovalKilledMidWayHoldsTheWorkspaceBriefly(t *testing.T) {
	t.Parallel()
	p, repo, task := controlProject(t, filesPlan("one.txt"))
	writesActivity(p, "gh_held", "  materialize: on_approval\n", "one.txt=first")
	r := p.Orbit("groundhog", "run", task, "--activity", "gh_held")
	require.Equal(t, 0, r.Code, r.String())
	held := testkit.Git(t, repo, "rev-parse", "refs/orbit/groundhog/"+task)
	p.StopEngine()
	died := serveToFailpoint(t, p, "groundhog-approve-after-fast-forward")

	// The client would wait on the dead engine for its answer: it is not
	// waited for.
	approve := p.Command("groundhog", "approve", task)
	require.NoError(t, approve.Start())
	died()
	killed := time.Now()
	_ = approve.Process.Kill()
	_ = approve.Wait()
	require.Equal(t, held, testkit.Git(t, repo, "rev-parse", "main"), "the fast-forward was made")

	serve(t, p)
	r = p.Orbit("groundhog", "approve", task)
	require.NotEqual(t, 0, r.Code, r.String())
	assert.Contains(t, r.Stderr, "held by run approve-", "the dead engine's hold")
	for {
		r = p.Orbit("groundhog", "approve", task)
		if r.Code == 0 || !strings.Contains(r.Stderr, "held by run approve-") {
			break
		}
		require.Less(t, time.Since(killed), time.Minute, "the hold outlived its TTL: %s", r.String())
		time.Sleep(time.Second)
	}
	require.Equal(t, 0, r.Code, r.String())
	assert.Contains(t, r.Stdout+r.Stderr, "cut short")
	assert.Greater(t, time.Since(killed), 20*time.Second, "the hold was kept while it could have been renewed")
	r = p.Orbit("groundhog", "verify", task)
	assert.Equal(t, 0, r.Code, r.String())
}
