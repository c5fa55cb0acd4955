package main

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/internal/engine"
	"github.com/orbitrun/orbit/projector"
)

func (a *app) replayCommand() *cobra.Command {
	var verify bool
	cmd := &cobra.Command{
		Use:   "replay",
		Short: "Rebuild every view from the log (with --verify: compare instead)",
		Long: `Rebuild every view from sequence 1 of the event log into a fresh file and swap
it in. With --verify, compare the rebuilt views with the live ones instead, check
the log as orbit audit does, and exit 1 on any difference or failure.`,
		Args: cobra.NoArgs,
		RunE: a.withEngine(func(ctx context.Context, l *events.Log, _ []string) error {
			var report projector.ReplayReport
			if err := request(ctx, l, engine.EndpointReplay, engine.ReplayRequest{Verify: verify}, &report); err != nil {
				return err
			}
			var integrity []events.AuditProblem
			if verify {
				audited, err := audit(ctx, l)
				if err != nil {
					return err
				}
				integrity = audited.Problems
			}
			if a.json {
				out := struct {
					projector.ReplayReport
					Integrity []events.AuditProblem `json:"integrity,omitempty"`
				}{report, integrity}
				if err := a.printJSON(out); err != nil {
					return err
				}
			} else if verify {
				a.printf("replayed %d events through sequence %d: %d differences, %d integrity problems\n", report.Events, report.Applied, len(report.Differences), len(integrity))
				for _, d := range report.Differences {
					a.printf("  %s %s\n    live:     %s\n    replayed: %s\n", d.Bucket, d.Key, d.Live, d.Replayed)
				}
				a.printProblems(integrity)
			} else {
				a.printf("rebuilt views from %d events through sequence %d\n", report.Events, report.Applied)
			}
			if verify && len(report.Differences)+len(integrity) > 0 {
				return unsuccessful
			}
			return nil
		}),
	}
	cmd.Flags().BoolVar(&verify, "verify", false, "compare a rebuild with the live views and audit the log; exit 1 on any difference or failure")
	return cmd
}
