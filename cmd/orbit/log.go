package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/orbitrun/orbit/assets"
	"github.com/orbitrun/orbit/engine"
	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/projector"
	"github.com/orbitrun/orbit/retention"
)

// retentionTimeout bounds an export or a pass: both read the whole log.
const retentionTimeout = 30 * time.Minute

func (a *app) logCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "log",
		Short: "Archive finished runs and tasks, and apply the retention policy",
		Args:  cobra.NoArgs,
	}
	cmd.AddCommand(a.logExportCommand(), a.logCollectCommand())
	return cmd
}

func (a *app) logExportCommand() *cobra.Command {
	var before, job, out string
	cmd := &cobra.Command{
		Use:   "export --before TIME|DURATION [--job J] [-o FILE]",
		Short: "Write the events of finished runs (and done or archived tasks) to an archive file",
		Long: `Write an archive of every run tree (a run and the runs it started) that
finished before --before, with its events exactly as the log stores them and
the blobs they reference; without --job, also the tasks done or archived whose
last change came before it. --before is a time (2026-01-31, 2026-01-31T12:00:00Z)
or an age (30d, 36h: that long ago). Nothing is removed from the log: the
retention policy (orbit log collect) removes what it archived.
orbit replay --from-archive reads the file back into views, orbit audit
--archive checks its signatures.`,
		Args: cobra.NoArgs,
		RunE: a.withEngine(func(ctx context.Context, l *events.Log, _ []string) error {
			at, err := parseBefore(before, time.Now())
			if err != nil {
				return usageErr("--before: %v", err)
			}
			if out == "" {
				out = fmt.Sprintf("orbit-%s.orbit-archive.gz", time.Now().UTC().Format("20060102T150405Z"))
			}
			path, err := filepath.Abs(out)
			if err != nil {
				return err
			}
			if _, err := os.Stat(path); err == nil {
				return usageErr("-o %s: the file exists; an archive is never written over", out)
			}
			ctx, cancel := context.WithTimeout(ctx, retentionTimeout)
			defer cancel()
			var rep engine.ExportReply
			if err := request(ctx, l, engine.EndpointExport, engine.ExportRequest{Before: at, Job: job, Path: path}, &rep); err != nil {
				return err
			}
			if a.json {
				return a.printJSON(rep)
			}
			a.printf("archived %d runs and %d tasks (%d events, %d blobs) to %s\nsha256 %s\n", len(rep.Runs), len(rep.Tasks), rep.Events, rep.Blobs, rep.Path, rep.SHA256)
			return nil
		}),
	}
	cmd.Flags().StringVar(&before, "before", "", "archive what finished before this time, or this long ago (30d, 36h)")
	cmd.Flags().StringVar(&job, "job", "", "only the run trees whose root run is of this job (and no task)")
	cmd.Flags().StringVarP(&out, "output", "o", "", "the archive file (default orbit-<time>.orbit-archive.gz here); never written over")
	_ = cmd.MarkFlagRequired("before")
	return cmd
}

// parseBefore reads --before: a time, a date, or an age before now.
func parseBefore(s string, now time.Time) (time.Time, error) {
	if d, err := assets.ParseRetentionDuration(s); err == nil {
		return now.Add(-d), nil
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05", "2006-01-02"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UTC(), nil
		}
	}
	return time.Time{}, fmt.Errorf("%q is neither a time (2026-01-31, 2026-01-31T12:00:00Z) nor an age (30d, 36h)", s)
}

func (a *app) logCollectCommand() *cobra.Command {
	var apply bool
	cmd := &cobra.Command{
		Use:   "collect [--apply]",
		Short: "Apply the retention policy once now (a dry run without --apply)",
		Long: `Apply the project's retention policy (retention: in .orbit/config.yaml) once,
as the engine does every retention.every: list the finished runs and the done
or archived tasks it lets go. Without --apply that is all (a dry run, as orbit
gc). With --apply they are exported to an archive in retention.archive_dir,
a signed log.removed record naming them is appended, they are purged from the
log, the views are rebuilt from what it retains, and orbit gc's collection
follows. Without a policy nothing is ever removed.`,
		Args: cobra.NoArgs,
		RunE: a.withEngine(func(ctx context.Context, l *events.Log, _ []string) error {
			ctx, cancel := context.WithTimeout(ctx, retentionTimeout)
			defer cancel()
			var rep retention.Report
			if err := request(ctx, l, engine.EndpointCollect, engine.CollectRequest{DryRun: !apply}, &rep); err != nil {
				return err
			}
			if a.json {
				return a.printJSON(rep)
			}
			switch {
			case rep.Kept != "":
				a.printf("nothing removed: %s\n", rep.Kept)
			case rep.DryRun:
				a.printf("would archive and remove %d runs and %d tasks (a dry run: orbit log collect --apply removes them)\n", len(rep.Runs), len(rep.Tasks))
			default:
				a.printf("archived and removed %d runs and %d tasks (%d events)", len(rep.Runs), len(rep.Tasks), rep.Events)
				if rep.Archive != "" {
					a.printf(" to %s", rep.Archive)
				}
				a.printf("\n")
			}
			for _, id := range rep.Runs {
				a.printf("  run  %s\n", id)
			}
			for _, id := range rep.Tasks {
				a.printf("  task %s\n", id)
			}
			return nil
		}),
	}
	cmd.Flags().BoolVar(&apply, "apply", false, "archive and remove (default: only say what would be removed)")
	return cmd
}

// archiveKey is the log key an archive is checked with: --log-key, else
// the root's, else none when the root has none.
func (a *app) archiveKey() (string, error) {
	if a.logKey != "" {
		return a.logKey, nil
	}
	root, err := a.root()
	if err != nil {
		return "", err
	}
	key := engine.LogKeyPath(root)
	if _, err := os.Stat(key); errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	return key, nil
}

// readArchive reads an archive named on the command line, and the log key
// it is checked with (archiveKey).
func (a *app) readArchive(path string) (*events.Archive, string, error) {
	arch, err := events.ReadArchive(path)
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, events.ErrBadArchive) {
		return nil, "", usageErr("%v", err)
	}
	if err != nil {
		return nil, "", err
	}
	key, err := a.archiveKey()
	return arch, key, err
}

// auditArchive is orbit audit --archive FILE.
func (a *app) auditArchive(path string) error {
	arch, key, err := a.readArchive(path)
	if err != nil {
		return err
	}
	report, err := events.AuditArchive(key, arch)
	if err != nil {
		return err
	}
	if a.json {
		if err := a.printJSON(report); err != nil {
			return err
		}
	} else {
		signed := "no log key: MACs not checked"
		if report.SignedFrom > 0 {
			signed = fmt.Sprintf("signed from sequence %d", report.SignedFrom)
		}
		a.printf("audited %d archived events of %s (%s): %d problems\n", report.Messages, path, signed, len(report.Problems))
		a.printProblems(report.Problems)
	}
	if len(report.Problems) > 0 {
		return unsuccessful
	}
	return nil
}

// replayArchive is orbit replay --from-archive FILE [--views DIR]: the
// archive folded into views of its own (DIR/views.db, or a temporary
// directory), and the runs and tasks they hold listed (with --json, each
// run as orbit run show --json gives it).
func (a *app) replayArchive(ctx context.Context, path, dir string) error {
	arch, key, err := a.readArchive(path)
	if err != nil {
		return err
	}
	src, err := events.NewArchiveSource(key, arch)
	if err != nil {
		return err
	}
	if dir == "" {
		if dir, err = os.MkdirTemp("", "orbit-archive-views-"); err != nil {
			return err
		}
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	views := filepath.Join(dir, "views.db")
	if err := projector.Rebuild(ctx, src, views, 0); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return usageErr("--views %s: it holds views already (%s)", dir, views)
		}
		return err
	}
	p, err := projector.Open(ctx, projector.Config{Path: views, Source: src})
	if err != nil {
		return err
	}
	defer p.Close()
	runs, err := p.Runs(ctx, projector.RunFilter{})
	if err != nil {
		return err
	}
	tasks, err := p.Tasks(ctx)
	if err != nil {
		return err
	}
	if a.json {
		full := make([]*projector.RunView, 0, len(runs))
		for _, r := range runs {
			v, err := p.RunView(ctx, r.ID)
			if err != nil {
				return err
			}
			full = append(full, v)
		}
		return a.printJSON(map[string]any{"views": views, "runs": full, "tasks": tasks})
	}
	a.printf("folded %d archived events into %s: %d runs, %d tasks\n", len(arch.Events), views, len(runs), len(tasks))
	for _, r := range runs {
		ended := ""
		if r.FinishedAt != nil {
			ended = r.FinishedAt.UTC().Format(time.RFC3339)
		}
		a.printf("  run  %s  %s  %s  %s\n", r.ID, r.Job, r.State, strings.TrimSpace(ended))
	}
	for _, t := range tasks {
		a.printf("  task %s  %s  %s\n", t.ID, t.Status, t.Title)
	}
	return nil
}
