package main

import (
	"context"
	"time"

	"github.com/spf13/cobra"

	"github.com/orbitrun/orbit/engine"
	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/projector"
)

// replayTimeout bounds a replay request: a rebuild reads the whole log, so
// it gets the engine's own bound on a request, not a read's.
const replayTimeout = 5 * time.Minute

// replayed is one engine's replay report, as --json prints it.
type replayed struct {
	Engine string `json:"engine,omitempty"`
	projector.ReplayReport
	Integrity []events.AuditProblem `json:"integrity,omitempty"`
}

func (a *app) replayCommand() *cobra.Command {
	var (
		verify      bool
		engineID    string
		allEngines  bool
		fromArchive string
		viewsDir    string
	)
	cmd := &cobra.Command{
		Use:   "replay",
		Short: "Rebuild every view from the log (with --verify: compare instead)",
		Long: `Rebuild every view from sequence 1 of the event log into a fresh file and swap
it in. With --verify, compare the rebuilt views with the live ones instead, check
the log as orbit audit does, and exit 1 on any difference or failure.

Each engine keeps views of its own. Without --engine or --all-engines, the
first engine to answer does the work; on a cluster, --engine ID asks that engine
and --all-engines every engine that answers the roll call, one after another
(with --json, a list of reports).

With --from-archive FILE, fold an archive (orbit log export, retention) into
views of its own instead, in --views DIR (default: a new temporary directory),
and list the runs and tasks they hold (with --json, each run as orbit run show
--json gives it). No engine is needed.`,
		Args: cobra.NoArgs,
	}
	live := a.withEngine(func(ctx context.Context, l *events.Log, _ []string) error {
		if engineID != "" && allEngines {
			return usageErr("--engine and --all-engines: pick one")
		}
		ctx, cancel := context.WithTimeout(ctx, replayTimeout)
		defer cancel()
		ask := func(ctx context.Context, endpoint string, req, resp any) error {
			return request(ctx, l, endpoint, req, resp)
		}
		var ids []string
		switch {
		case engineID != "":
			ids = []string{engineID}
		case allEngines:
			var err error
			if ids, err = l.Engines(ctx); err != nil {
				return &exitError{code: exitUnavailable, err: err}
			}
		}
		if ids == nil {
			r, err := a.replayOne(ctx, ask, verify)
			if err != nil {
				return err
			}
			return a.printReplays([]replayed{r}, verify, false)
		}
		var reports []replayed
		for _, id := range ids {
			r, err := a.replayOne(ctx, func(ctx context.Context, endpoint string, req, resp any) error {
				return requestEngine(ctx, l, id, endpoint, req, resp)
			}, verify)
			if err != nil {
				return err
			}
			r.Engine = id
			reports = append(reports, r)
		}
		return a.printReplays(reports, verify, allEngines)
	})
	cmd.RunE = func(c *cobra.Command, args []string) error {
		if fromArchive == "" {
			if viewsDir != "" {
				return usageErr("--views goes with --from-archive")
			}
			return live(c, args)
		}
		if verify || engineID != "" || allEngines {
			return usageErr("--from-archive folds an archive into views of its own: no --verify, --engine or --all-engines")
		}
		ctx, cancel := context.WithTimeout(c.Context(), replayTimeout)
		defer cancel()
		return a.replayArchive(ctx, fromArchive, viewsDir)
	}
	cmd.Flags().StringVar(&fromArchive, "from-archive", "", "fold this archive file into views of its own")
	cmd.Flags().StringVar(&viewsDir, "views", "", "with --from-archive: the directory of the views (default: a new temporary one)")
	cmd.Flags().BoolVar(&verify, "verify", false, "compare a rebuild with the live views and audit the log; exit 1 on any difference or failure")
	cmd.Flags().StringVar(&engineID, "engine", "", "ask the engine with this id only (on a cluster: each engine has views of its own)")
	cmd.Flags().BoolVar(&allEngines, "all-engines", false, "ask every engine that answers, one after another")
	return cmd
}

// replayOne asks one engine, through ask, to replay (and with verify, to
// audit the log).
func (a *app) replayOne(ctx context.Context, ask func(ctx context.Context, endpoint string, req, resp any) error, verify bool) (replayed, error) {
	var r replayed
	if err := ask(ctx, engine.EndpointReplay, engine.ReplayRequest{Verify: verify}, &r.ReplayReport); err != nil {
		return r, err
	}
	if verify {
		var audited events.AuditReport
		if err := ask(ctx, engine.EndpointAudit, nil, &audited); err != nil {
			return r, err
		}
		r.Integrity = audited.Problems
	}
	return r, nil
}

// printReplays prints the reports, one per engine (a JSON list when list
// is set), and is unsuccessful when a verification found anything.
func (a *app) printReplays(reports []replayed, verify, list bool) error {
	failed := false
	for _, r := range reports {
		failed = failed || (verify && len(r.Differences)+len(r.Integrity) > 0)
	}
	if a.json {
		var out any = reports[0]
		if list {
			out = reports
		}
		if err := a.printJSON(out); err != nil {
			return err
		}
	} else {
		for _, r := range reports {
			if r.Engine != "" {
				a.printf("engine %s: ", r.Engine)
			}
			if !verify {
				a.printf("rebuilt views from %d events through sequence %d\n", r.Events, r.Applied)
				continue
			}
			a.printf("replayed %d events through sequence %d: %d differences, %d integrity problems\n", r.Events, r.Applied, len(r.Differences), len(r.Integrity))
			for _, d := range r.Differences {
				a.printf("  %s %s\n    live:     %s\n    replayed: %s\n", d.Bucket, d.Key, d.Live, d.Replayed)
			}
			a.printProblems(r.Integrity)
		}
	}
	if failed {
		return unsuccessful
	}
	return nil
}
