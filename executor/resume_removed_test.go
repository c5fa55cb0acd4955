package executor_test

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/internal/runrig"
	"github.com/orbitrun/orbit/internal/testkit"
)

// TestARunRetentionIsRemovingIsNotResumed: a run that ended
// budget_exhausted and that a log.removed record names (a retention pass
// recorded its removal and was killed before the purge, which its next
// pass finishes) is not resumed: the raise is refused naming the record
// and the archive, and nothing is written.
func TestARunRetentionIsRemovingIsNotResumed(t *testing.T) {
	t.Parallel()
	log := testkit.StartLog(t, events.Config{})
	ctx := testkit.Context(t)
	job := resumeSlotJob(t, filepath.Join(t.TempDir(), "no-hold"))
	startWithJobs(t, log, 3, job)
	id, fin := runrig.RunJob(t, log, job, nil)
	require.Equal(t, events.StateBudgetExhausted, fin.State, "%+v", fin.Error)
	hist := runrig.History(t, log, id)
	last := hist[len(hist)-1].Seq
	_, err := log.Append(ctx, events.Event{Type: events.LogRemoved, ID: events.DecisionID(events.LogRemoved, "test", id)},
		events.LogRemovedData{Runs: []string{id}, Subjects: []string{events.RunFilter(id)}, Seqs: []events.SeqRange{{From: hist[0].Seq, Through: last}},
			Count: uint64(len(hist)), LastSeq: last, Archive: "a.orbit-archive.gz", ArchiveSHA256: "00"})
	require.NoError(t, err)

	refusal := refusedResume(t, log, id)
	assert.Contains(t, refusal, "removed from the log by retention")
	assert.Contains(t, refusal, "a.orbit-archive.gz")
}
