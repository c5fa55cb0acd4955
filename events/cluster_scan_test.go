package events_test

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/events"
)

// TestExportAndAuditOnALaggingReplicaReadTheWholeLog: a reader connected
// to a follower of the event stream that was down while 2,000 events were
// appended exports a run right after each of its appends, through the
// last sequence, and audits the log: each archive holds every event of
// the run through it, and audit finds nothing missing. Their scans are
// direct gets a replica behind the leader answers short; they go on from
// where the answer ended until they reach the sequence the leader holds
// (a short export was written as whole, and the removal recorded from it
// left a run half in the log).
func TestExportAndAuditOnALaggingReplicaReadTheWholeLog(t *testing.T) {
	t.Parallel()
	ctx, c, w, follower := laggingFollower(t, 3000)
	through, err := w.LastSeq(ctx)
	require.NoError(t, err)
	c.Restart(follower)
	r := readerOn(ctx, t, c, follower)

	// At once, while the follower catches up: its direct gets are on
	// from 90% of the way.
	dir := t.TempDir()
	short, audits := 0, 0
	for i := range 6 {
		if i%2 == 1 {
			rep, err := r.Audit(ctx)
			require.NoError(t, err)
			if len(rep.Problems) > 0 {
				audits++
			}
			continue
		}
		exp, err := r.Export(ctx, filepath.Join(dir, fmt.Sprintf("%d.orbit-archive.gz", i)), events.ExportSelection{Runs: []string{"R1"}, Through: through})
		require.NoError(t, err)
		if exp.Events != 3010 {
			short++
		}
	}
	assert.Zero(t, short, "exports that missed events, of 3")
	assert.Zero(t, audits, "audits that found problems in a whole log, of 3")
}
