package main_test

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/internal/testkit"
)

// TestClusterResumesARaisedRunOnce: two engines on a three-node cluster
// both follow a run's budget raise; exactly one resumes it. Through the
// binary and the HTTP loop against the scripted Anthropic server: the run
// is started through one engine's root and resumed through the other's;
// the log holds one run.resumed, one new attempt of the stopped step and
// one more run.finished, every scripted turn is asked for once, and both
// engines' views verify.
func TestClusterResumesARaisedRunOnce(t *testing.T) {
	clusterChaos(t)
	t.Parallel()
	srv := testkit.NewAnthropicServer(t, resumeTurns()...)
	c := testkit.StartCluster(t, filepath.Join(t.TempDir(), "creds"))
	ps := clusterProjects(t, c, 2, "resumable", resumeJob)
	for _, p := range ps {
		p.Env = append(p.Env, "ANTHROPIC_BASE_URL="+srv.URL(), "ANTHROPIC_API_KEY=sk-ant-orbit-test")
		testkit.StartEngine(t, p)
	}

	r := ps[0].Orbit("job", "run", "resumable")
	require.Equal(t, 1, r.Code, r.String())
	id := strings.TrimSpace(r.Stdout)
	waitForLong(t, "the run's end in the other engine's views", func() bool {
		return runView(t, ps[1], id).State == events.StateBudgetExhausted
	})
	r = ps[1].Orbit("run", "resume", id, "--max-tokens", "5000")
	require.Equal(t, 0, r.Code, r.String())

	// Long enough for an engine that thought the run its own to show it.
	time.Sleep(5 * time.Second)
	raised := runEvents(t, ps[0], id, "--type", events.RunBudgetRaised)
	require.Len(t, raised, 1)
	var resumed, finished int
	for _, ev := range runEvents(t, ps[0], id) {
		if ev.Seq < raised[0].Seq {
			continue
		}
		switch ev.Type {
		case events.RunResumed:
			resumed++
		case events.RunFinished:
			finished++
		}
	}
	assert.Equal(t, 1, resumed, "run.resumed after the raise")
	assert.Equal(t, 1, finished, "run.finished after the raise")
	assert.Equal(t, map[string][]string{
		"first":  {events.StateBudgetExhausted, events.StateSuccess},
		"second": {events.StateSuccess},
	}, stepAttempts(t, ps[0], id))
	assert.Len(t, srv.Scripted(), 3, "every scripted turn was asked for, once")
	for _, p := range ps {
		v := p.Orbit("replay", "--verify")
		assert.Equal(t, 0, v.Code, v.String())
	}
}
