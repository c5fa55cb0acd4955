package main

import (
	"context"
	"strings"

	"github.com/spf13/cobra"

	"github.com/orbitrun/orbit/events"
)

func (a *app) blobCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "blob", Short: "Read values the log keeps as blobs"}
	get := &cobra.Command{
		Use:   "get <digest>",
		Short: "Print a blob whole: a long shell output, a large value moved out of an event",
		Long: `Print the bytes of a blob to stdout, as stored. Events name blobs by digest:
a shell step's stdout_blob / stderr_blob past 64 KiB, and {"$blob": "sha256-…"}
wherever a value was too large to stay in its event (see docs/limits.md).

Exit status: 0 printed, 2 no such blob, 3 no engine could be reached.`,
		Args: exactArgs(1, "a blob digest"),
		RunE: a.withEngine(func(ctx context.Context, l *events.Log, args []string) error {
			digest := strings.TrimSpace(args[0])
			if !strings.HasPrefix(digest, "sha256-") {
				return usageErr("%q is not a blob digest (sha256-…)", digest)
			}
			data, err := l.GetBlob(ctx, digest)
			if err != nil {
				return err
			}
			_, err = a.stdout.Write(data)
			return err
		}),
	}
	cmd.AddCommand(get)
	return cmd
}
