package main_test

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/internal/testkit"
)

// TestALostLogStopsTheEngine: a log that is deleted, or replaced by an
// older copy, is an error, not a fresh start (DESIGN §2). A running engine
// whose stream is deleted stops within seconds; an engine start refuses
// the log with what it found, what it expected and the ways on, exit 3;
// `orbit init --new-log` accepts the log as it is.
func TestALostLogStopsTheEngine(t *testing.T) {
	t.Parallel()
	t.Run("the stream deleted under a running engine", func(t *testing.T) {
		t.Parallel()
		p := testkit.NewProject(t)
		pid := startedEngine(t, p)

		// `nats stream rm ORBIT_EVENTS`, with rights to do it.
		js := outsideJetStream(t, p)
		ctx := testkit.Context(t)
		require.NoError(t, js.DeleteStream(ctx, events.EventsStream))
		deleted := time.Now()
		require.True(t, testkit.WaitGone(pid, 15*time.Second), "the engine stopped")
		t.Logf("the engine stopped %s after the stream was deleted", time.Since(deleted).Round(10*time.Millisecond))
		log, err := os.ReadFile(filepath.Join(p.Root, ".orbit", "state", "engine.log"))
		require.NoError(t, err)
		assert.Contains(t, string(log), "no stream ORBIT_EVENTS: it was deleted under the running engine")

		for _, args := range [][]string{{"run", "history"}, {"serve", "--listen", "127.0.0.1:0"}} {
			r := p.Orbit(args...)
			assert.Equal(t, 3, r.Code, "%v: %s", args, r)
			assert.Contains(t, r.Stderr, "the event log was lost or replaced: found no stream ORBIT_EVENTS;", args)
			assert.Contains(t, r.Stderr, "expected stream ORBIT_EVENTS created ", args)
			assert.Contains(t, r.Stderr, "orbit init --new-log --root "+p.Root, args)
			assert.Contains(t, r.Stderr, "restore the log's store ("+filepath.Join(p.Root, ".orbit", "state", "nats")+") from a copy", args)
		}
		assert.Zero(t, p.EnginePID(), "no engine serves the lost log")

		r := p.Orbit("init", "--new-log")
		require.Equal(t, 0, r.Code, r.String())
		assert.Contains(t, r.Stdout, "Set the views aside as "+filepath.Join(p.Root, ".orbit", "state", "views.db.lost-"))
		lost, err := filepath.Glob(filepath.Join(p.Root, ".orbit", "state", "views.db.lost-*"))
		require.NoError(t, err)
		assert.Len(t, lost, 1)
		r = p.Orbit("job", "run", "hello")
		require.Equal(t, 0, r.Code, r.String())
		assert.Len(t, lostLogHistory(t, p), 1, "a new log: only the run since")
		r = p.Orbit("replay", "--verify")
		assert.Equal(t, 0, r.Code, r.String())
		assert.Contains(t, r.Stdout, ": 0 differences")
	})

	t.Run("the store restored from an older copy", func(t *testing.T) {
		t.Parallel()
		p := testkit.NewProject(t)
		r := p.Orbit("job", "run", "hello")
		require.Equal(t, 0, r.Code, r.String())
		p.StopEngine()
		store := filepath.Join(p.Root, ".orbit", "state", "nats")
		backup := filepath.Join(t.TempDir(), "nats")
		require.NoError(t, os.CopyFS(backup, os.DirFS(store)))
		for range 2 {
			r = p.Orbit("job", "run", "hello")
			require.Equal(t, 0, r.Code, r.String())
		}
		assert.Len(t, lostLogHistory(t, p), 3)
		r = p.Orbit("init", "--new-log")
		assert.Equal(t, 2, r.Code, r.String())
		assert.Empty(t, r.Stdout, "not \"already initialised\"")
		assert.Regexp(t, `^orbit: nothing was set aside: the background engine \(pid `+strconv.Itoa(p.EnginePID())+`, started by an orbit command\) serves this root and holds its views\. Stop it with orbit engine stop \(or wait: it exits after its idle timeout, engine\.idle_timeout_seconds\), then run orbit init --new-log again\n$`,
			r.Stderr, "the views of a running engine stay")
		p.StopEngine()
		require.NoError(t, os.RemoveAll(store))
		require.NoError(t, os.CopyFS(store, os.DirFS(backup)))

		r = p.Orbit("run", "history")
		assert.Equal(t, 3, r.Code, r.String())
		assert.Contains(t, r.Stderr, "the event log was lost or replaced: found a log that ends at sequence ")
		assert.Contains(t, r.Stderr, "restored from an older copy or replaced")
		assert.Contains(t, r.Stderr, "orbit init --new-log")
		assert.Zero(t, p.EnginePID())

		r = p.Orbit("init", "--new-log")
		require.Equal(t, 0, r.Code, r.String())
		assert.Len(t, lostLogHistory(t, p), 1, "the views are the restored log's")
		r = p.Orbit("replay", "--verify")
		assert.Equal(t, 0, r.Code, r.String())
		assert.Contains(t, r.Stdout, ": 0 differences")
	})
}

// lostLogHistory returns the runs `orbit run history --json` lists.
func lostLogHistory(t *testing.T, p *testkit.Project) []map[string]any {
	t.Helper()
	return orbitJSON[[]map[string]any](t, p, "run", "history", "--json")
}
