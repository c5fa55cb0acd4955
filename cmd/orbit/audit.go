package main

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/orbitrun/orbit/engine"
	"github.com/orbitrun/orbit/events"
)

func (a *app) auditCommand() *cobra.Command {
	var archive string
	cmd := &cobra.Command{
		Use:   "audit",
		Short: "Check the whole event log: signatures, places, decoding and missing events",
		Long: `Check every message of the event log: that it carries a valid MAC by the log
key (from the sequence the key was made at), bound to its message id, and
stored within a minute of its time or else as the first message under its
id (from the sequence the log moved to that format); that it decodes; that
no sequence is missing up to the last the stream ever stored — the stream
denies deletes, so a missing event was removed behind its back; and what an
event stored a second time would break: an id seen before, an event after
its run's end, a time long before its run's earlier events. Lists every
failure and exits 1 on any. Notes, which are no failures, list the events
stored late that are the first under their id: every reader reads them.
Sequences retention removed, which a signed log.removed record names, are no
failure; any other missing sequence is.

With --archive FILE, check an archive (orbit log export, retention) instead:
that it is whole, and every event's MAC by the root's log key (or --log-key).
No engine is needed.`,
		Args: cobra.NoArgs,
	}
	cmd.Flags().StringVar(&archive, "archive", "", "check this archive file instead of the log")
	live := a.withEngine(func(ctx context.Context, l *events.Log, _ []string) error {
		report, err := audit(ctx, l)
		if err != nil {
			return err
		}
		if a.json {
			if err := a.printJSON(report); err != nil {
				return err
			}
		} else {
			signed := "not signed: MACs not checked"
			if report.SignedFrom > 0 {
				signed = fmt.Sprintf("signed from sequence %d", report.SignedFrom)
			}
			if report.BoundFrom > 0 && report.BoundFrom != report.SignedFrom {
				signed += fmt.Sprintf(", bound from sequence %d", report.BoundFrom)
			}
			a.printf("audited %d events through sequence %d (%s): %d problems\n", report.Messages, report.LastSeq, signed, len(report.Problems))
			a.printProblems(report.Problems)
			if len(report.Notes) > 0 {
				a.printf("noted, and no problem:\n")
				a.printProblems(report.Notes)
			}
		}
		if len(report.Problems) > 0 {
			return unsuccessful
		}
		return nil
	})
	cmd.RunE = func(c *cobra.Command, args []string) error {
		if archive != "" {
			return a.auditArchive(archive)
		}
		return live(c, args)
	}
	return cmd
}

// audit asks the engine to check its log.
func audit(ctx context.Context, l *events.Log) (events.AuditReport, error) {
	var report events.AuditReport
	err := request(ctx, l, engine.EndpointAudit, nil, &report)
	return report, err
}

func (a *app) printProblems(problems []events.AuditProblem) {
	for _, p := range problems {
		a.printf("  %s\n", p)
	}
}
