package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"

	"github.com/spf13/cobra"

	"github.com/orbitrun/orbit/assets"
	"github.com/orbitrun/orbit/engine"
	"github.com/orbitrun/orbit/events"
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
	// CA, Cert and Key are the TLS files: the CA the engine's certificate
	// is checked against, and the client certificate shown to an engine
	// whose serve.tls has a ca.
	CA   string `json:"ca,omitempty"`
	Cert string `json:"cert,omitempty"`
	Key  string `json:"key,omitempty"`
}

// contextName is the nats CLI context name for root and identity: orbit-,
// the root's directory name, a short hash of the root's absolute path (two
// projects of one name are two contexts), and -reader for the reader.
func contextName(root string, id events.Identity) string {
	sum := sha256.Sum256([]byte(root))
	name := "orbit-" + regexp.MustCompile(`[^A-Za-z0-9_-]+`).ReplaceAllString(filepath.Base(root), "_") + "-" + hex.EncodeToString(sum[:4])
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

// contextURL is the URL a context of root reaches its engine at, and when
// that URL serves only while orbit serve runs, a note that says so: the
// --nats-url given, else nats.url, else the URL of an orbit serve running
// now, else serve.listen. Never a background engine's: it listens on a
// port of its own and exits when idle.
func (a *app) contextURL(root string, cfg *assets.Config) (url, note string) {
	switch {
	case a.natsURL != "":
		return a.natsURL, ""
	case cfg.NATS.URL != "":
		return cfg.NATS.URL, ""
	}
	if info, err := engine.ReadInfo(root); err == nil && !info.Background && info.URL != "" {
		return info.URL, ""
	}
	url = "nats://" + cfg.Serve.Listen
	if cfg.Serve.TLS != nil {
		url = "tls://" + cfg.Serve.Listen
	}
	return url, fmt.Sprintf("the context reaches the engine only while 'orbit serve' runs for %s: it listens at %s (an engine that another command starts listens on a port of its own and stops when idle)", root, url)
}

// checkContextOwner refuses to replace the context file at path unless it
// is root's own (it signs in with a seed of root's creds directory) or
// force is set.
func checkContextOwner(path, root string, force bool) error {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) || force {
		return nil
	}
	if err != nil {
		return err
	}
	var old natsContext
	_ = json.Unmarshal(data, &old)
	creds := filepath.Dir(old.NKey)
	if old.NKey != "" && creds == engine.CredsDir(root) {
		return nil
	}
	// <root>/.orbit/state/creds/<identity>.nk
	if owner := filepath.Dir(filepath.Dir(filepath.Dir(creds))); old.NKey != "" && creds == engine.CredsDir(owner) {
		return usageErr("%s is the context of %s, another project: pass --force to replace it, or --name to write another", path, owner)
	}
	return usageErr("%s exists and is not a context of %s: pass --force to replace it, or --name to write another", path, root)
}

func (a *app) natsContextCommand() *cobra.Command {
	var (
		reader bool
		force  bool
		name   string
	)
	cmd := &cobra.Command{
		Use:   "nats-context [--reader]",
		Short: "Write a context for the official nats CLI to reach this project's engine",
		Long: `Write a context file for the official nats CLI (natscli) that signs in to the
project's engine as its client identity (with --reader: the reader, which
may only subscribe to and read the log and the blobs), and print how to use
it. The context is named orbit-<directory>-<hash of the root's path>, so two
projects of one name get one each; a context of another project (or one
Orbit did not write) is replaced only with --force.

The URL is --nats-url (or nats.url in .orbit/config.yaml), else that of an
'orbit serve' running now, else serve.listen: the address 'orbit serve'
listens at, which the context then reaches only while 'orbit serve' runs
(an engine that another command starts listens on a port of its own and
exits when idle). The context names the seed file in .orbit/state/creds/;
it holds no secret itself. It also sets the identity's own inbox prefix,
the only inbox the server lets it subscribe to, and the TLS files: the CA
(--tls-ca, else serve.tls.ca, else serve.tls.cert) and the client
certificate of --tls-cert and --tls-key.`,
		Example: `  orbit nats-context --reader
  nats --context orbit-myproject-1a2b3c4d-reader sub 'orbit.events.>'`,
		Args: cobra.NoArgs,
		RunE: func(_ *cobra.Command, _ []string) error {
			root, err := a.project()
			if err != nil {
				return err
			}
			cfg, err := a.config(root)
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
			url, note := a.contextURL(root, cfg)
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
			path := filepath.Join(dir, name+".json")
			if err := checkContextOwner(path, root, force); err != nil {
				return err
			}
			c := natsContext{
				Description: fmt.Sprintf("Orbit project %s, as its %s", root, id),
				URL:         url,
				NKey:        creds.File(id),
				InboxPrefix: events.InboxPrefix(creds.Public[id]),
			}
			if f := a.tlsFiles(root); f != nil {
				// natscli reads them from wherever it runs.
				for dst, src := range map[*string]string{&c.CA: f.CA, &c.Cert: f.Cert, &c.Key: f.Key} {
					if src != "" {
						if *dst, err = filepath.Abs(src); err != nil {
							return err
						}
					}
				}
			}
			data, err := json.MarshalIndent(c, "", "  ")
			if err != nil {
				return err
			}
			if err := os.WriteFile(path, append(data, '\n'), 0o600); err != nil {
				return err
			}
			a.printf("wrote %s (%s as %s)\n", path, url, id)
			if note != "" {
				a.printf("%s\n", note)
			}
			a.printf("  nats --context %s sub 'orbit.events.>'\n", name)
			if id == events.IdentityClient {
				a.printf("  nats --context %s request orbit.api.engine.info ''\n", name)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&reader, "reader", false, "sign in as the reader identity (subscribe and read only)")
	cmd.Flags().StringVar(&name, "name", "", "the context's name (default orbit-<project directory>-<hash>[-reader])")
	cmd.Flags().BoolVar(&force, "force", false, "replace a context of that name that belongs to another project")
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
