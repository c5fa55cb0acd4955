package main

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sort"

	"github.com/spf13/cobra"

	"github.com/orbitrun/orbit/assets"
	"github.com/orbitrun/orbit/engine"
	"github.com/orbitrun/orbit/events"
)

func (a *app) initCommand() *cobra.Command {
	var newLog bool
	cmd := &cobra.Command{
		Use:   "init",
		Short: "Create .orbit/ with a config file and sample assets",
		Long: `Create .orbit/ in the project directory (--root, else the current directory)
with config.yaml, a .gitignore for the engine's state, a sample activity
and job, routines/ (its README shows a routine to copy), and the project's NATS identities (engine, client, reader, agent) in
.orbit/state/creds/, readable by their owner only: the engine's server admits
no one else. Existing files and keys are left alone, so init is safe to run
again.

With --new-log, init accepts the event log as it is after the engine refused
it as lost or replaced (deleted, or restored from an older copy): the views
file is set aside as views.db.lost-<unix time> and the next engine rebuilds
the views from the log it finds. The engine must be stopped.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			root := a.rootFlag
			if root == "" {
				root = "."
			}
			root, err := filepath.Abs(root)
			if err != nil {
				return err
			}
			if fi, err := os.Stat(root); err != nil || !fi.IsDir() {
				return usageErr("%s is not a directory: create it first (orbit init makes only .orbit/ inside it)", root)
			}
			dir := filepath.Join(root, ".orbit")
			if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
				for up := filepath.Dir(root); up != filepath.Dir(up); up = filepath.Dir(up) {
					if fi, err := os.Stat(filepath.Join(up, ".orbit")); err == nil && fi.IsDir() {
						a.errorf("orbit: warning: %s is inside the Orbit project %s; this creates a separate project (commands run here will use it, not %s)\n", root, up, up)
						break
					}
				}
			}
			files := assets.Scaffold()
			names := make([]string, 0, len(files))
			for name := range files {
				names = append(names, name)
			}
			sort.Strings(names)
			created := 0
			for _, name := range names {
				path := filepath.Join(dir, name)
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					return err
				}
				f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
				if errors.Is(err, fs.ErrExist) {
					continue
				}
				if err != nil {
					return err
				}
				if _, err := f.Write(files[name]); err != nil {
					f.Close()
					return err
				}
				if err := f.Close(); err != nil {
					return err
				}
				created++
			}
			creds, err := events.EnsureCreds(engine.CredsDir(root))
			if err != nil {
				return err
			}
			switch {
			case created == 0 && newLog:
				// Nothing to say: accepting the log is what was asked.
			case created == 0:
				a.printf("Orbit project in %s is already initialised\n", dir)
			default:
				a.printf("Initialised Orbit project in %s\n", dir)
				a.printf("Identities (engine, client, reader, agent) in %s; see orbit nats-context\n", creds.Dir)
			}
			if newLog {
				return a.acceptNewLog(root)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&newLog, "new-log", false, "accept the event log as it is: set the views aside and rebuild them from the log")
	return cmd
}
