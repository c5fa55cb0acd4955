package main

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/orbitrun/orbit/engine"
	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/executor"
)

func (a *app) jobPauseCommand(unpause bool) *cobra.Command {
	var reason string
	cmd := &cobra.Command{
		Use:   "pause <job>",
		Short: "Pause a job: its new runs queue until it is unpaused",
		Long: `Pause a job: runs of it requested from now on (orbit job run, a parent's
job.invoke, a routine's tick) are recorded and queue, and none starts until
'orbit job unpause'. Runs already started are not affected: pause them with
'orbit run pause --job JOB'. The pause is kept by the engines (key
jobpause.<job> of orbit_leases): it holds across restarts, and every engine
of a cluster honours it. 'orbit job list' and 'orbit job show' say paused.`,
		Args: exactArgs(1, "a job name"),
	}
	verb := "paused"
	if unpause {
		cmd.Use, cmd.Short, verb = "unpause <job>", "Unpause a job: its queued runs start as slots allow", "unpaused"
		cmd.Long = `Unpause a job: the runs of it that queued while it was paused start, in the
order they were requested, as its max_active_runs allows.`
	}
	cmd.RunE = a.withEngine(func(ctx context.Context, l *events.Log, args []string) error {
		var res engine.JobPaused
		q := engine.JobPauseRequest{Job: args[0], Unpause: unpause, Requester: requester(), Reason: reason}
		if err := request(ctx, l, engine.EndpointJobPause, q, &res); err != nil {
			return err
		}
		if a.json {
			return a.printJSON(res)
		}
		if !res.Changed {
			a.errorf("job %s was already %s\n", res.Job, verb)
		}
		return nil
	})
	if !unpause {
		cmd.Flags().StringVar(&reason, "reason", "", "why, for the record")
	}
	return cmd
}

// pausedJobs returns the paused jobs by name as the project's running
// engine says; nil when no engine runs: job list and job show start none.
func (a *app) pausedJobs(ctx context.Context) map[string]executor.JobPause {
	var l *events.Log
	if a.natsURL != "" {
		var err error
		if l, err = a.dial(ctx, a.natsURL); err != nil {
			return nil
		}
	} else {
		root, err := a.project()
		if err != nil {
			return nil
		}
		if _, err := engine.ReadInfo(root); err != nil {
			return nil
		}
		cfg, err := a.clientConfig(root)
		if err != nil {
			return nil
		}
		if l, err = a.dialRoot(ctx, root, cfg); err != nil {
			return nil
		}
	}
	defer l.Close()
	var list []executor.JobPause
	if err := request(ctx, l, engine.EndpointJobsPaused, struct{}{}, &list); err != nil {
		return nil
	}
	out := make(map[string]executor.JobPause, len(list))
	for _, p := range list {
		out[p.Job] = p
	}
	return out
}
