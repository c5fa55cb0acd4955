package main

import (
	"github.com/spf13/cobra"

	"github.com/orbitrun/orbit/events"
)

func (a *app) nkeyCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "nkey",
		Short: "Make nkeys for clients on other machines, or for an external NATS server",
	}
	cmd.AddCommand(&cobra.Command{
		Use:   "new <seed-file>",
		Short: "Write a fresh nkey seed and print its public key",
		Long: `Write a fresh nkey user seed to <seed-file>, readable by its owner only, and
print the key's public half. An engine started with --nkey <seed-file> admits
clients that sign its challenge with that key, with the permissions of the
project's client identity, besides the identities in .orbit/state/creds/:
they pass the same --nkey (or ORBIT_NKEY). Unlike a token, the seed never
crosses the wire. An existing file is never overwritten.`,
		Example: `  orbit nkey new ~/.orbit-engine.nk
  orbit serve --listen 0.0.0.0:4222 --nkey ~/.orbit-engine.nk
  ORBIT_NKEY=~/.orbit-engine.nk orbit run history --nats-url nats://host:4222`,
		Args: cobra.ExactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			public, err := events.NewNKeySeed(args[0])
			if err != nil {
				return err
			}
			a.printf("%s\n", public)
			return nil
		},
	})
	return cmd
}
