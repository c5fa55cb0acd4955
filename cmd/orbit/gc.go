package main

import (
	"context"
	"strings"

	"github.com/spf13/cobra"

	"github.com/orbitrun/orbit/engine"
	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/shipping"
)

// gcTimeout bounds a collection request: it reads the whole log for the
// blobs it names, so it gets the engine's own bound on a request.
const gcTimeout = replayTimeout

func (a *app) gcCommand() *cobra.Command {
	var opts engine.CollectOptions
	cmd := &cobra.Command{
		Use:   "gc [--apply] [--blobs] [--worktrees] [--branches] [--grace D] [--force]",
		Short: "Collect what finished work left behind: blobs, worktrees, branches (a dry run without --apply)",
		Long: `List what finished work left behind and what becomes of each, and with --apply
remove what is garbage:

  blobs      blobs of orbit_blobs that no event of the log and no queued
             command names, stored more than the grace ago
  worktrees  the worktrees of shipping runs (.orbit/state/worktrees/<run>)
             whose run finished more than the grace ago and that hold no
             change; one with changes nobody committed is kept
  branches   the branches the log says Orbit made (a shipping run's, a
             Groundhog attempt's scratch branch) whose run finished more
             than the grace ago, checked out nowhere, and whose commits are
             all on another branch, a remote or a tag; one with commits of
             its own is kept (with --force, removed once its task is
             archived). A branch the log does not record is never touched.

Without a kind, all three. Without --apply nothing is removed. The engine
does the removing, and records it in the log as gc.collected.`,
		Args: cobra.NoArgs,
		RunE: a.withEngine(func(ctx context.Context, l *events.Log, _ []string) error {
			opts.By = requester()
			// The engine is found within a read's bound; the collection
			// itself may take longer.
			var info engine.InfoReply
			if err := request(ctx, l, engine.EndpointInfo, nil, &info); err != nil {
				return err
			}
			ctx, cancel := context.WithTimeout(ctx, gcTimeout)
			defer cancel()
			var rep engine.CollectReport
			if err := request(ctx, l, engine.EndpointGC, opts, &rep); err != nil {
				return err
			}
			if a.json {
				return a.printJSON(rep)
			}
			return a.printCollection(&rep)
		}),
	}
	f := cmd.Flags()
	f.BoolVar(&opts.Apply, "apply", false, "remove what is garbage (default: only say what would be removed)")
	f.BoolVar(&opts.Blobs, "blobs", false, "collect blobs")
	f.BoolVar(&opts.Worktrees, "worktrees", false, "collect worktrees")
	f.BoolVar(&opts.Branches, "branches", false, "collect branches")
	f.StringVar(&opts.Grace, "grace", shipping.DefaultGCGrace.String(), "keep what is younger than this, or whose run finished less than this ago")
	f.BoolVar(&opts.Force, "force", false, "also remove an archived task's branches that hold commits nothing else has")
	return cmd
}

func (a *app) printCollection(rep *engine.CollectReport) error {
	if c := rep.BlobCounts; c != nil {
		verb := "removed"
		if rep.DryRun {
			verb = "would remove"
		}
		a.printf("blobs: %d stored, %d kept (named by the log or a queued command, or younger than %s), %s %d (%d bytes)\n",
			c.Stored, c.Kept, rep.Grace, verb, c.Collected, c.Bytes)
		for _, b := range rep.Blobs {
			a.printf("  %s  %s  %d bytes  stored %s\n", b.Outcome, b.Digest, b.Size, b.Modified.UTC().Format("2006-01-02T15:04:05Z"))
		}
	}
	if len(rep.Worktrees) > 0 {
		a.printf("worktrees:\n")
		t := newTable(a.stdout, "  OUTCOME", "RUN", "RUN STATE", "BRANCH", "REASON")
		for _, w := range rep.Worktrees {
			t.row("  "+w.Outcome, w.RunID, or(w.RunState, "-"), or(w.Branch, "-"), or(w.Reason, "-"))
		}
		if err := t.flush(); err != nil {
			return err
		}
	}
	if len(rep.Branches) > 0 {
		a.printf("branches:\n")
		t := newTable(a.stdout, "  OUTCOME", "BRANCH", "KIND", "RUN", "TASKS", "REASON")
		for _, b := range rep.Branches {
			t.row("  "+b.Outcome, b.Branch, b.Kind, b.RunID, or(strings.Join(b.TaskIDs, ","), "-"), or(b.Reason, "-"))
		}
		if err := t.flush(); err != nil {
			return err
		}
	}
	switch {
	case rep.DryRun:
		a.printf("(a dry run: orbit gc --apply removes those marked would_remove)\n")
	case rep.Seq > 0:
		a.printf("recorded as gc.collected (sequence %d)\n", rep.Seq)
	default:
		a.printf("nothing to collect\n")
	}
	return nil
}
