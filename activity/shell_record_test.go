package activity_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/internal/runrig"
	"github.com/orbitrun/orbit/internal/testkit"
)

// A shell step's program starts only once its activity.started is
// stored, though the step waits for it only at the fork: while the server
// refuses the record (one event per subject, and the run's
// activity.started subject holds one already), the program does not run
// and its command is left for redelivery; once the record is taken, the
// program runs once and the run succeeds, with shell.exited stored before
// step.finished. (A run of step protocol 4: under 5 a first execution on
// an embedded store has no activity.started.)
func TestAShellStepForksOnlyOnceItsStartIsStored(t *testing.T) {
	t.Parallel()
	ctx := testkit.Context(t)
	log := testkit.StartLog(t, events.Config{Listen: "127.0.0.1:0"})
	mark := filepath.Join(t.TempDir(), "ran.txt")
	job := runrig.ParseJob(t, `
schemaVersion: 2
kind: Job
metadata: {name: recorded}
spec:
  steps:
    - id: work
      spec: {type: shell, program: sh, args: ["-c", "echo ran >> `+mark+`"], allowed_programs: [sh]}
`)
	runID := runrig.RequestUnder(t, log, job, nil, 4)
	_, err := log.Append(ctx, events.Event{Type: events.ActivityStarted, RunID: runID, StepKey: "decoy"},
		events.ActivityStartedData{Attempt: 1, ActivityType: "shell", Worker: "decoy", Delivery: 1})
	require.NoError(t, err)

	js, err := jetstream.New(testkit.DialEngine(t, log.ClientURL(), log.CredsDir()))
	require.NoError(t, err)
	stream, err := js.Stream(ctx, events.EventsStream)
	require.NoError(t, err)
	open := stream.CachedInfo().Config
	limited := open
	limited.MaxMsgsPerSubject, limited.Discard, limited.DiscardNewPerSubject = 1, jetstream.DiscardNew, true
	_, err = js.UpdateStream(ctx, limited)
	require.NoError(t, err)

	runrig.StartEngine(t, log, t.TempDir(), func(context.Context) ([]string, error) { return []string{runID}, nil })
	runrig.WaitFor(t, "the step to start", func() bool { return runrig.Has(t, log, runID, events.StepStarted, "work") })
	time.Sleep(time.Second) // the worker tries to record the start, and is refused
	_, err = os.Stat(mark)
	assert.True(t, os.IsNotExist(err), "the program ran without its activity.started: %v", err)
	assert.False(t, runrig.Has(t, log, runID, events.ActivityStarted, "work"))

	_, err = js.UpdateStream(ctx, open)
	require.NoError(t, err)
	fin := runrig.WaitFinished(t, log, runID)
	assert.Equal(t, events.StateSuccess, fin.State, "%+v", fin.Error)
	ran, err := os.ReadFile(mark)
	require.NoError(t, err)
	assert.Equal(t, 1, strings.Count(string(ran), "ran"))
	assert.Equal(t, []string{events.StepStarted, events.ActivityStarted, events.ShellExited, events.StepFinished},
		stepTypes(runrig.History(t, log, runID))["work"])
}
