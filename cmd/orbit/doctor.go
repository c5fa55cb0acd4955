package main

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/orbitrun/orbit/doctor"
	"github.com/orbitrun/orbit/engine"
)

func (a *app) doctorCommand() *cobra.Command {
	var (
		monitor []string
		maxSkew time.Duration
	)
	cmd := &cobra.Command{
		Use:   "doctor",
		Short: "Check the set-up: engine, environment, config, credentials, NATS, git, CLI agents and their sandbox, keys, clocks",
		Long: `Check the project's set-up and say, for each finding, how to fix it: the
engine (running, started from this shell's environment, its configuration
loaded and current), the credentials and their modes, the NATS server
(reachable, JetStream, the fsync policy, replicas against the cluster's
size, free disk against the reserve), git's version, the CLI agents on PATH
against the versions Orbit supports, their sandbox on the engine's machine
(what it does not enforce: everything without user namespaces, file
permissions for a root engine), the provider keys in the engine's
environment (by name, never value), and the engines' clocks.

Like every command, it starts a background engine when none serves the
project. Exit status 1 when a finding fails, 0 otherwise (warnings
included).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			root, err := a.project()
			if err != nil {
				return err
			}
			f := &doctor.Facts{
				Root: root, Lookup: os.LookupEnv, Monitors: monitor, MaxSkew: maxSkew,
				FreeSpace: freeSpace, ExternalURL: a.natsURL != "",
			}
			f.Config, f.ConfigErr = a.config(root)
			if f.Config != nil && f.Config.NATS.URL != "" {
				f.ExternalURL = true
			}
			if f.ConfigErr == nil {
				f.Catalog, _ = a.catalog(root)
			}
			f.Log, f.ConnectErr = a.connectLog(ctx)
			if f.Log != nil {
				defer f.Log.Close()
				a.doctorEngines(ctx, f, root)
			}
			rep := doctor.Run(ctx, f)
			if a.json {
				if err := a.printJSON(rep); err != nil {
					return err
				}
			} else {
				a.printDoctor(rep)
			}
			if !rep.Healthy {
				return unsuccessful
			}
			return nil
		},
	}
	cmd.Flags().StringSliceVar(&monitor, "nats-monitor", nil, "monitoring URL of a NATS server (http://host:8222), to check its fsync policy; one for each server of a cluster (repeated, or separated by commas)")
	cmd.Flags().DurationVar(&maxSkew, "max-skew", time.Second, "how far an engine's clock may be from this machine's")
	return cmd
}

// doctorEngines asks the engine serving the root for its status, and every
// engine on the server for its clock.
func (a *app) doctorEngines(ctx context.Context, f *doctor.Facts, root string) {
	ids, _ := f.Log.Engines(ctx)
	if info, err := engine.ReadInfo(root); err == nil && !f.ExternalURL {
		ids = []string{info.Engine}
	}
	for i, id := range ids {
		var st engine.Status
		asked := time.Now()
		err := requestEngine(ctx, f.Log, id, engine.EndpointStatus, nil, &st)
		answered := time.Now()
		if i == 0 {
			f.StatusErr = err
			if err == nil {
				f.Status = &st
			}
		}
		if err == nil {
			f.Clocks = append(f.Clocks, doctor.EngineClock{Engine: id, Asked: asked, Answered: answered, EngineNow: st.Now})
		}
	}
	if len(ids) == 0 {
		f.StatusErr = errors.New("no engine answered the roll call")
	}
}

func (a *app) printDoctor(rep doctor.Report) {
	marks := map[doctor.Level]string{doctor.OK: "ok  ", doctor.Warn: "warn", doctor.Fail: "FAIL", doctor.Skip: "skip"}
	for _, x := range rep.Findings {
		a.printf("%s  %-14s %s\n", marks[x.Level], x.Check, x.Detail)
		if x.Fix != "" {
			a.printf("      %-14s fix: %s\n", "", x.Fix)
		}
	}
	if rep.Healthy {
		a.printf("healthy\n")
	} else {
		a.printf("something is wrong: see FAIL above\n")
	}
}

// freeSpace is the space available to unprivileged writers on dir's
// filesystem (the nearest existing ancestor of dir).
func freeSpace(dir string) (uint64, error) {
	var st syscall.Statfs_t
	for {
		err := syscall.Statfs(dir, &st)
		if err == nil {
			return st.Bavail * uint64(st.Bsize), nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return 0, err
		}
		dir = parent
	}
}
