package main_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/engine"
	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/internal/testkit"
)

// TestASignedStepCommandWithNoDecisionNeverRuns is an outsider holding
// the engine's seed and the log key (all a stolen .orbit/state/creds
// gives) who sends a validly signed step command for a run that does not
// exist, while a real run goes on: the command never runs, it is recorded
// as integrity.rejected under the run it names, and the real run ends as
// it would have.
func TestASignedStepCommandWithNoDecisionNeverRuns(t *testing.T) {
	t.Parallel()
	p := testkit.NewProject(t)
	p.WriteFile(".orbit/jobs/slow.yaml", sleepJob)
	serve(t, p)
	info, err := engine.ReadInfo(p.Root)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	keyed, err := events.Dial(ctx, info.URL, events.Config{
		NKeySeedFile: events.CredsFile(engine.CredsDir(p.Root), events.IdentityEngine),
		LogKeyFile:   engine.LogKeyPath(p.Root),
		Redactor:     &events.Redactor{},
	})
	require.NoError(t, err)
	t.Cleanup(func() { keyed.Close() })
	require.True(t, keyed.Signing())

	runID := runJob(t, p, "slow", "--detach")

	pwned := filepath.Join(p.Root, "pwned")
	require.NoError(t, keyed.Send(ctx, "step.shell.FAKE.x.1", "forged", map[string]any{
		"run_id": "FAKE", "job": "x", "step_key": "x", "attempt": 1, "workspace": p.Root, "timeout_seconds": 10,
		"activity": map[string]any{"type": "shell", "program": "sh", "args": []string{"-c", "touch " + pwned}, "allowed_programs": []string{"sh"}},
	}))

	var rejected []events.IntegrityRejectedData
	waitFor(t, "the signed command's rejection", func() bool {
		evs, err := keyed.Read(ctx, events.FollowOptions{Filters: []string{events.EventSubject(events.AggregateRun, "FAKE", events.IntegrityRejected)}})
		require.NoError(t, err)
		rejected = rejected[:0]
		for _, ev := range evs {
			var d events.IntegrityRejectedData
			require.NoError(t, ev.Decode(&d))
			rejected = append(rejected, d)
		}
		return len(rejected) > 0
	})
	require.Len(t, rejected, 1)
	assert.Equal(t, events.CommandSubject("step.shell.FAKE.x.1"), rejected[0].Subject)
	assert.Equal(t, events.ReasonNoDecision, rejected[0].Reason)
	_, err = os.Stat(pwned)
	assert.ErrorIs(t, err, os.ErrNotExist, "the signed command never ran")
	queue, err := outsideJetStream(t, p).Stream(ctx, events.StepsStream)
	require.NoError(t, err)
	_, err = queue.GetLastMsgForSubject(ctx, events.CommandSubject("step.shell.FAKE.x.1"))
	assert.ErrorIs(t, err, jetstream.ErrMsgNotFound, "the command is removed from the queue")

	waitFor(t, "the run to finish", func() bool { return terminal(p, runID) })
	v := runView(t, p, runID)
	assert.Equal(t, events.StateSuccess, v.State)
	out, _ := v.Output.(map[string]any)
	assert.Equal(t, "real\n", out["stdout"])
}
