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
it in. With --verify, compare the rebuilt views with the live ones instead and
exit 1 on any difference.`,
		Args: cobra.NoArgs,
		RunE: a.withEngine(func(ctx context.Context, l *events.Log, _ []string) error {
			var report projector.ReplayReport
			if err := request(ctx, l, engine.EndpointReplay, engine.ReplayRequest{Verify: verify}, &report); err != nil {
				return err
			}
			if a.json {
				if err := a.printJSON(report); err != nil {
					return err
				}
			} else if verify {
				a.printf("replayed %d events through sequence %d: %d differences\n", report.Events, report.Applied, len(report.Differences))
				for _, d := range report.Differences {
					a.printf("  %s %s\n    live:     %s\n    replayed: %s\n", d.Bucket, d.Key, d.Live, d.Replayed)
				}
			} else {
				a.printf("rebuilt views from %d events through sequence %d\n", report.Events, report.Applied)
			}
			if verify && len(report.Differences) > 0 {
				return unsuccessful
			}
			return nil
		}),
	}
	cmd.Flags().BoolVar(&verify, "verify", false, "compare a rebuild with the live views; exit 1 on any difference")
	return cmd
}
