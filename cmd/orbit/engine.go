package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/orbitrun/orbit/engine"
	"github.com/orbitrun/orbit/events"
)

// stopTimeout is how long orbit engine stop waits for the engine to exit
// by default: it finishes answering, stops its parts and lets the steps it
// runs go (they resume elsewhere or at the next start).
const stopTimeout = time.Minute

func (a *app) engineCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "engine",
		Short: "Show, stop or restart the engine that serves the project",
		Long: `Show, stop or restart the engine that serves the project: the one recorded
in .orbit/state/engine.json (an orbit serve, or a background engine a command
started), or with --engine ID one of the engines on the NATS server or cluster
that --nats-url (or nats.url in .orbit/config.yaml) names.

A running engine reloads .orbit/config.yaml when it changes; what it cannot
change while it runs (durability, serve.listen, serve.http, nats.url,
nats.replicas, engine.ack_wait_seconds) takes a restart, and status says so.`,
	}
	cmd.AddCommand(a.engineStatusCommand(), a.engineStopCommand(), a.engineRestartCommand())
	return cmd
}

func (a *app) engineStatusCommand() *cobra.Command {
	var id string
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Show the engine: pid, address, uptime, version, and the configuration it runs with",
		Long: `Show the engine: its pid, address, uptime and version, the .orbit/config.yaml
it loaded (hash and times), the settings the file changed since the engine
started that only a restart applies, and why the file as it is now does not
load, if it does not (the engine then keeps the configuration it loaded).

Exit status 3 when no engine serves the project.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			l, target, err := a.findEngine(ctx, id)
			if err != nil {
				return err
			}
			defer l.Close()
			var st engine.Status
			if err := requestEngine(ctx, l, target, engine.EndpointStatus, nil, &st); err != nil {
				return err
			}
			if a.json {
				return a.printJSON(st)
			}
			a.printStatus(&st)
			return nil
		},
	}
	cmd.Flags().StringVar(&id, "engine", "", "the id of the engine on the NATS server or cluster (default: the one serving this root)")
	return cmd
}

func (a *app) printStatus(st *engine.Status) {
	kind := "orbit serve"
	if st.Background {
		kind = "background, started by a command"
	}
	a.printf("engine %s (pid %d, %s)\n", st.Engine, st.PID, kind)
	a.printf("  url         %s\n", st.URL)
	a.printf("  root        %s\n", st.Root)
	a.printf("  version     %s\n", st.Version)
	a.printf("  up          %s (since %s)\n", (time.Duration(st.UptimeSeconds) * time.Second).String(), st.Started.Format(time.RFC3339))
	a.printf("  durability  %s\n", st.Durability)
	c := st.Config
	file := c.File
	if c.Missing {
		file += " (none: every default)"
	}
	a.printf("  config      %s\n", file)
	a.printf("              %s, loaded %s", c.Hash, c.Loaded.Format(time.RFC3339))
	if !c.Modified.IsZero() {
		a.printf(" (modified %s)", c.Modified.Format(time.RFC3339))
	}
	a.printf("\n")
	if len(c.RestartNeeded) > 0 {
		a.printf("  restart needed: %s (changed in the file since the engine started; orbit engine restart applies them)\n", strings.Join(c.RestartNeeded, ", "))
	}
	if p := c.Error; p != nil {
		more := ""
		if p.More > 0 {
			more = fmt.Sprintf(" (and %d more)", p.More)
		}
		a.printf("  config error: %s%s\n", p.Problem.String(), more)
		a.printf("              the file does not load: the engine keeps the configuration it loaded (%s)\n", c.Hash)
	}
}

func (a *app) engineStopCommand() *cobra.Command {
	var (
		id      string
		timeout time.Duration
	)
	cmd := &cobra.Command{
		Use:   "stop",
		Short: "Stop the engine gracefully and wait until it has exited",
		Long: `Stop the engine as SIGTERM would, and wait until it has exited: it stops
taking work, and what runs on it resumes at the next start (or on another
engine of a cluster). Only the engine serving this root, or the one --engine
names, is stopped. Any identity that may call the engine's API may stop it:
the project's client (the owner's key) and keys admitted with serve --nkey.

Exit status 3 when no engine serves the project; 1 when it has not exited
within --timeout.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			l, target, err := a.findEngine(ctx, id)
			if err != nil {
				return err
			}
			defer l.Close()
			stopped, err := a.stopEngine(ctx, l, target, timeout)
			if err != nil {
				return err
			}
			if a.json {
				return a.printJSON(stopped)
			}
			a.printf("stopped engine %s (pid %d)\n", stopped.Engine, stopped.PID)
			return nil
		},
	}
	cmd.Flags().StringVar(&id, "engine", "", "the id of the engine on the NATS server or cluster (default: the one serving this root)")
	cmd.Flags().DurationVar(&timeout, "timeout", stopTimeout, "how long to wait for the engine to exit")
	return cmd
}

func (a *app) engineRestartCommand() *cobra.Command {
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "restart",
		Short: "Stop the background engine and start a new one, which loads the configuration anew",
		Long: `Stop the background engine serving the project and start a new one, as any
command would: it starts with the configuration as .orbit/config.yaml has it
now and with this shell's environment (provider keys and settings). With no
engine running it starts one.

An engine run in the foreground by orbit serve is not restarted from here:
it belongs to the terminal or service manager that runs it; the command says
so and exits 2.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			root, err := a.project()
			if err != nil {
				return err
			}
			if info, err := engine.ReadInfo(root); err == nil {
				if !info.Background {
					return usageErr("engine %s (pid %d) runs in the foreground (orbit serve): restart it where it runs — interrupt it (or orbit engine stop) and run orbit serve again; commands start a background engine when none runs",
						info.Engine, info.PID)
				}
				l, err := a.dialRootAs(ctx, root)
				if err != nil {
					return &exitError{code: exitUnavailable, err: fmt.Errorf("engine %s (pid %d) does not answer: %w", info.Engine, info.PID, err)}
				}
				_, err = a.stopEngine(ctx, l, info.Engine, timeout)
				l.Close()
				if err != nil {
					return err
				}
			}
			l, err := a.startEngine(ctx, root)
			if err != nil {
				return err
			}
			l.Close()
			info, err := engine.ReadInfo(root)
			if err != nil {
				return &exitError{code: exitUnavailable, err: fmt.Errorf("the new engine: %w", err)}
			}
			if a.json {
				return a.printJSON(info)
			}
			a.printf("started engine %s (pid %d) at %s\n", info.Engine, info.PID, info.URL)
			return nil
		},
	}
	cmd.Flags().DurationVar(&timeout, "timeout", stopTimeout, "how long to wait for the old engine to exit")
	return cmd
}

// findEngine connects to the engines without starting one and returns the
// id of the one meant: id, else the engine recorded for the root. No
// engine is exit status 3. It signs in as the root's client (unless
// --nkey or --token says otherwise) also on a NATS server or cluster,
// whether or not an engine of the root runs: the engines there serve the
// project whose identities they share.
func (a *app) findEngine(ctx context.Context, id string) (*events.Log, string, error) {
	root, err := a.project()
	if err != nil {
		if a.natsURL == "" || id == "" {
			return nil, "", err
		}
		l, err := a.dial(ctx, a.natsURL)
		return l, id, err
	}
	url := a.natsURL
	if url == "" {
		if project, err := a.config(root); err == nil {
			url = project.NATS.URL
		}
	}
	cfg, err := a.clientConfig(root)
	if err != nil {
		return nil, "", err
	}
	var l *events.Log
	if url != "" {
		l, err = events.Dial(ctx, url, cfg)
	} else {
		url = "the engine serving " + root
		l, err = a.dialRoot(ctx, root, cfg)
	}
	switch {
	case errors.Is(err, events.ErrUnauthorized):
		return nil, "", refused(url, err)
	case err != nil:
		return nil, "", &exitError{code: exitUnavailable, err: fmt.Errorf("no engine serves %s", root)}
	}
	if id != "" {
		return l, id, nil
	}
	if info, err := engine.ReadInfo(root); err == nil {
		return l, info.Engine, nil
	}
	defer l.Close()
	msg := "no engine serves " + root
	if ids, err := l.Engines(ctx); err == nil && len(ids) > 0 {
		msg += fmt.Sprintf(" here; name one of the server's with --engine: %s", strings.Join(ids, ", "))
	}
	return nil, "", &exitError{code: exitUnavailable, err: errors.New(msg)}
}

// stopEngine asks engine id to stop and waits until it has exited: its
// process is gone when it runs on this machine for this root, else it no
// longer answers the roll call.
func (a *app) stopEngine(ctx context.Context, l *events.Log, id string, timeout time.Duration) (*engine.Stopping, error) {
	// Read before the engine, on its way out, removes it.
	var here *engine.Info
	if root, err := a.project(); err == nil {
		here, _ = engine.ReadInfo(root)
	}
	var stopped engine.Stopping
	if err := requestEngine(ctx, l, id, engine.EndpointStop, engine.StopRequest{Engine: id, Requester: requester()}, &stopped); err != nil {
		return nil, err
	}
	local := here != nil && here.Engine == id && here.PID == stopped.PID
	gone := func() bool {
		if local {
			return !engine.Running(stopped.PID)
		}
		ids, err := l.Engines(ctx)
		return errors.Is(err, events.ErrUnavailable) || err == nil && !slices.Contains(ids, id)
	}
	deadline := time.Now().Add(timeout)
	for !gone() {
		if time.Now().After(deadline) {
			return nil, &exitError{code: exitUnsuccess, err: fmt.Errorf("engine %s (pid %d) was asked to stop and has not exited within %s; its log says why (.orbit/state/engine.log for a background engine)",
				id, stopped.PID, timeout)}
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
	return &stopped, nil
}
