package main

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/internal/engine"
)

func (a *app) auditCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "audit",
		Short: "Check the whole event log: signatures, decoding and missing events",
		Long: `Check every message of the event log: that it carries a valid MAC by the log
key (from the sequence the key was made at), that it decodes, and that no
sequence is missing up to the last the stream ever stored — the stream denies
deletes, so a missing event was removed behind its back. Lists every failure
and exits 1 on any.`,
		Args: cobra.NoArgs,
		RunE: a.withEngine(func(ctx context.Context, l *events.Log, _ []string) error {
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
				a.printf("audited %d events through sequence %d (%s): %d problems\n", report.Messages, report.LastSeq, signed, len(report.Problems))
				a.printProblems(report.Problems)
			}
			if len(report.Problems) > 0 {
				return unsuccessful
			}
			return nil
		}),
	}
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
