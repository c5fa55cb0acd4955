package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"

	"github.com/spf13/cobra"

	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/internal/engine"
)

// natsContext is the part of a context file of the official nats CLI
// (github.com/nats-io/natscli) that Orbit writes.
type natsContext struct {
	Description string `json:"description"`
	URL         string `json:"url"`
	NKey        string `json:"nkey"`
	// InboxPrefix is the identity's own inbox (events.InboxPrefix): the
	// only one the server lets it subscribe to, so requests need it.
	InboxPrefix string `json:"inbox_prefix"`
}

// contextName is the nats CLI context name for root and identity: orbit-
// and the root's directory name, and -reader for the reader.
func contextName(root string, id events.Identity) string {
	name := "orbit-" + regexp.MustCompile(`[^A-Za-z0-9_-]+`).ReplaceAllString(filepath.Base(root), "_")
	if id == events.IdentityReader {
		name += "-reader"
	}
	return name
}

// natsContextDir is where the nats CLI looks for contexts.
func natsContextDir() (string, error) {
	dir := os.Getenv("XDG_CONFIG_HOME")
	if dir == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", err
		}
		dir = filepath.Join(home, ".config")
	}
	return filepath.Join(dir, "nats", "context"), nil
}

func (a *app) natsContextCommand() *cobra.Command {
	var reader bool
	var name string
	cmd := &cobra.Command{
		Use:   "nats-context [--reader]",
		Short: "Write a context for the official nats CLI to reach this project's engine",
		Long: `Write a context file for the official nats CLI (natscli) that signs in to the
project's engine as its client identity (with --reader: the reader, which
may only subscribe to and read the log and the blobs), and print how to use
it. The URL is the running engine's (engine.json), else serve.listen: start
the engine with 'orbit serve' so that it listens there. The context names the
seed file in .orbit/state/creds/; it holds no secret itself. It also sets the
identity's own inbox prefix, the only inbox the server lets it subscribe to.`,
		Example: `  orbit nats-context --reader
  nats --context orbit-myproject-reader sub 'orbit.events.>'`,
		Args: cobra.NoArgs,
		RunE: func(_ *cobra.Command, _ []string) error {
			root, err := a.project()
			if err != nil {
				return err
			}
			id := events.IdentityClient
			if reader {
				id = events.IdentityReader
			}
			creds, err := events.EnsureCreds(engine.CredsDir(root))
			if err != nil {
				return err
			}
			url, running := "", false
			if info, err := engine.ReadInfo(root); err == nil && info.URL != "" {
				url, running = info.URL, true
			} else {
				cfg, err := a.config(root)
				if err != nil {
					return err
				}
				url = "nats://" + cfg.Serve.Listen
			}
			if name == "" {
				name = contextName(root, id)
			}
			dir, err := natsContextDir()
			if err != nil {
				return err
			}
			if err := os.MkdirAll(dir, 0o700); err != nil {
				return err
			}
			data, err := json.MarshalIndent(natsContext{
				Description: fmt.Sprintf("Orbit project %s, as its %s", root, id),
				URL:         url,
				NKey:        creds.File(id),
				InboxPrefix: events.InboxPrefix(creds.Public[id]),
			}, "", "  ")
			if err != nil {
				return err
			}
			path := filepath.Join(dir, name+".json")
			if err := os.WriteFile(path, append(data, '\n'), 0o600); err != nil {
				return err
			}
			a.printf("wrote %s (%s as %s)\n", path, url, id)
			if !running {
				a.printf("no engine serves %s now: start it with 'orbit serve' so that it listens at %s\n", root, url)
			}
			a.printf("  nats --context %s sub 'orbit.events.>'\n", name)
			if id == events.IdentityClient {
				a.printf("  nats --context %s request orbit.api.engine.info ''\n", name)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&reader, "reader", false, "sign in as the reader identity (subscribe and read only)")
	cmd.Flags().StringVar(&name, "name", "", "the context's name (default orbit-<project directory>[-reader])")
	return cmd
}

func (a *app) natsConfigCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "nats-config",
		Short: "Print the nats-server accounts block for this project's identities",
		Long: `Print the accounts block of a nats-server configuration that admits this
project's engine, client, reader and agent identities as the embedded server
does: the engine alone in the ORBIT account, which holds the streams, the
buckets, the object stores and the API; each other identity in an account of
its own that imports from ORBIT only what it may use (the client reading and
the orbit.api request/reply API, the reader reading only, the agent, what a
CLI agent's orbit mcp signs in as, the roll call and the groundhog.verb
endpoint only), with the same permissions. Put it in the configuration of an
external server or cluster and start engines with --nats-url; they sign in
with .orbit/state/creds/engine.nk (copy that directory to every engine of the
project), and clients with client.nk. A server configured before accounts
keeps Orbit's streams in its global account: move them to ORBIT.`,
		Example: `  orbit nats-config >> /etc/nats/orbit.conf`,
		Args:    cobra.NoArgs,
		RunE: func(_ *cobra.Command, _ []string) error {
			root, err := a.project()
			if err != nil {
				return err
			}
			creds, err := events.EnsureCreds(engine.CredsDir(root))
			if err != nil {
				return err
			}
			a.printf("# Orbit project %s: identities from %s\n%s", root, creds.Dir, events.AccountsBlock(creds))
			return nil
		},
	}
}
