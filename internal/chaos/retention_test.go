package chaos_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/internal/testkit"
	"github.com/orbitrun/orbit/projector"
	"github.com/orbitrun/orbit/retention"
)

// TestChaosRetention: the engine is killed (SIGKILL) in the middle of a
// retention pass, at each of its steps: the archive written and nothing
// recorded (retention-exported), the log.removed record stored and
// nothing purged (retention-recorded), the first subject of a record
// purged and the others not (retention-purging); runs are made between
// the kills, and a last engine finishes the pass. Then every run ever made
// is either still in the log (orbit run show) or in an archive that
// replays it to a finished run, orbit audit and orbit replay --verify
// pass, and every run gone from the log is in an archive.
func TestChaosRetention(t *testing.T) {
	if testing.Short() {
		t.Skip("the chaos suite kills real engines; skipped under -short")
	}
	r := &rig{t: t, p: testkit.NewProject(t)}
	t.Cleanup(r.stop)
	r.p.WriteFile(".orbit/config.yaml", "retention:\n  runs:\n    keep_per_job: 1\n")
	var runs []string
	newRuns := func(n int) {
		t.Helper()
		for range n {
			out, err := r.orbitOK("job", "run", "hello")
			if err != nil {
				t.Fatal(err)
			}
			runs = append(runs, strings.TrimSpace(out))
		}
	}
	for _, point := range []string{retention.FailpointExported, events.FailpointRemovalRecorded, events.FailpointRemovalPurging} {
		if err := r.start(""); err != nil {
			t.Fatal(err)
		}
		newRuns(3)
		r.stop()
		if err := r.start(point); err != nil {
			t.Fatal(err)
		}
		res, err := r.orbit("log", "collect", "--apply")
		if !errors.Is(err, errEngineGone) || !r.eng.diesWithin(10*time.Second) || !r.eng.killedBySIGKILL() {
			t.Fatalf("the pass was not killed at %s: %v %s\n%s", point, err, res, r.eng.stderr)
		}
		r.eng.forgetInfo(r.p)
	}
	if err := r.start(""); err != nil {
		t.Fatal(err)
	}
	if _, err := r.orbitOK("log", "collect", "--apply"); err != nil {
		t.Fatal(err)
	}
	for _, check := range [][]string{{"audit"}, {"replay", "--verify"}} {
		if _, err := r.orbitOK(check...); err != nil {
			t.Fatal(err)
		}
	}

	archived := map[string]string{} // run → its state in an archive
	files, err := filepath.Glob(filepath.Join(r.p.Root, ".orbit", "archive", "*.orbit-archive.gz"))
	if err != nil {
		t.Fatal(err)
	}
	key := filepath.Join(r.p.Root, ".orbit", "state", "creds", events.LogKeyFile)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, f := range files {
		a, err := events.ReadArchive(f)
		if err != nil {
			t.Fatal(err)
		}
		if rep, err := events.AuditArchive(key, a); err != nil || len(rep.Problems) > 0 {
			t.Fatalf("archive %s: %v %v", f, rep.Problems, err)
		}
		src, err := events.NewArchiveSource(key, a)
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(t.TempDir(), "views.db")
		if err := projector.Rebuild(ctx, src, path, 0); err != nil {
			t.Fatal(err)
		}
		views, err := projector.Open(ctx, projector.Config{Path: path, Source: src})
		if err != nil {
			t.Fatal(err)
		}
		held, err := views.Runs(ctx, projector.RunFilter{})
		views.Close()
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range held {
			archived[v.ID] = v.State
		}
	}
	var problems []string
	live := 0
	for _, id := range runs {
		res, err := r.orbit("run", "show", id)
		if err != nil {
			t.Fatal(err)
		}
		if res.Code == 0 {
			live++
			continue
		}
		if state, ok := archived[id]; !ok || state != events.StateSuccess {
			problems = append(problems, fmt.Sprintf("run %s is neither in the log nor archived (archived as %q)", id, state))
		}
	}
	t.Logf("%d runs: %d in the log, %d archives holding %d runs", len(runs), live, len(files), len(archived))
	if live != 1 {
		problems = append(problems, fmt.Sprintf("%d runs left in the log, want the one keep_per_job keeps", live))
	}
	if len(problems) > 0 {
		t.Fatalf("retention trial:\n%s\nthe engine's stderr:\n%s", strings.Join(problems, "\n"), r.eng.stderr)
	}
	if _, err := os.Stat(projector.SnapshotPath(filepath.Join(r.p.Root, ".orbit", "state", "views.db"))); err != nil {
		t.Errorf("no snapshot of the views after the removal: %v", err)
	}
}
