package main

import (
	"context"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/orbitrun/orbit/engine"
	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/routine"
)

func (a *app) routineCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "routine",
		Short: "Routines: runs started on a schedule (.orbit/routines/*.yaml)",
		Long: `A routine starts runs of a job on a cron schedule. Every engine of the
project schedules them, and each tick fires at most once. See the README's
"Routines".`,
	}
	cmd.AddCommand(a.routineListCommand(), a.routineShowCommand(),
		a.routineSetCommand("pause", "Pause a routine: no tick fires until it is resumed", true),
		a.routineSetCommand("resume", "Resume a routine: the ticks that passed are missed ticks (missed_run)", false),
		a.routineRunNowCommand())
	return cmd
}

func (a *app) routines(ctx context.Context, l *events.Log) (engine.Routines, error) {
	var rs engine.Routines
	err := request(ctx, l, engine.EndpointRoutines, struct{}{}, &rs)
	for _, p := range rs.Problems {
		a.errorf("orbit: routine file left out: %s\n", p)
	}
	for _, p := range rs.Unrunnable {
		a.errorf("orbit: routine target cannot run: %s\n", p)
	}
	return rs, err
}

func when(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format(time.RFC3339)
}

func (a *app) routineListCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "List the routines with their last and next fire",
		Args:  exactArgs(0, ""),
		RunE: a.withEngine(func(ctx context.Context, l *events.Log, _ []string) error {
			rs, err := a.routines(ctx, l)
			if err != nil {
				return err
			}
			if a.json {
				return a.printJSON(rs.Routines)
			}
			w := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(w, "NAME\tCRON\tTARGET\tSTATE\tLAST FIRE\tNEXT FIRE\tFIRED\tSKIPPED")
			for _, s := range rs.Routines {
				state := "active"
				if s.State.Paused {
					state = "paused"
				}
				fmt.Fprintf(w, "%s\t%s\tjob:%s\t%s\t%s\t%s\t%d\t%d\n", s.Routine.Name, s.Routine.Cron, s.Routine.Job, state, when(s.State.LastFire), when(s.Next), s.State.Fired, s.State.Skipped)
			}
			return w.Flush()
		}),
	}
}

func (a *app) routineStatus(ctx context.Context, l *events.Log, name string) (routine.Status, error) {
	rs, err := a.routines(ctx, l)
	if err != nil {
		return routine.Status{}, err
	}
	for _, s := range rs.Routines {
		if s.Routine.Name == name {
			return s, nil
		}
	}
	list := make([]*routine.Routine, 0, len(rs.Routines))
	for _, s := range rs.Routines {
		list = append(list, s.Routine)
	}
	_, err = routine.Find(list, name)
	return routine.Status{}, &exitError{code: exitUsage, err: err}
}

func (a *app) routineShowCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "show <name>",
		Short: "Show a routine: its schedule, policy and state",
		Args:  exactArgs(1, "a routine name"),
		RunE: a.withEngine(func(ctx context.Context, l *events.Log, args []string) error {
			s, err := a.routineStatus(ctx, l, args[0])
			if err != nil {
				return err
			}
			if a.json {
				return a.printJSON(s)
			}
			r, st := s.Routine, s.State
			a.printf("Routine:   %s\nFile:      %s\nCron:      %s (missed_run: %s)\nTarget:    job:%s\n", r.Name, r.Source, r.Cron, r.MissedRun, r.Job)
			a.printf("Policy:    overlap: %s, timeout_minutes: %d, retries: %d every %d min\n", r.Overlap, r.TimeoutMinutes, r.Retries, r.BackoffMinutes)
			state := "active"
			if st.Paused {
				state = "paused"
			}
			a.printf("State:     %s\nLast fire: %s %s\nNext fire: %s\nFired:     %d\nSkipped:   %d\n", state, when(st.LastFire), st.LastRun, when(s.Next), st.Fired, st.Skipped)
			if st.Action == routine.ActionSkipped {
				a.printf("Last tick: %s skipped (%s) %s\n", when(st.Last), st.Reason, st.Running)
				if st.Error != "" {
					a.printf("Refused:   %s\n", st.Error)
				}
			}
			if r.Retries > 0 {
				a.printf("Retries:   %d of %d for the tick of %s\n", st.Retries, r.Retries, when(st.LastFire))
				if !st.RetryAt.IsZero() {
					a.printf("Next retry: %s\n", when(st.RetryAt))
				}
			}
			return nil
		}),
	}
}

func (a *app) routineSetCommand(verb, short string, paused bool) *cobra.Command {
	endpoint := engine.EndpointRoutineResume
	if paused {
		endpoint = engine.EndpointRoutinePause
	}
	return &cobra.Command{
		Use:   verb + " <name>",
		Short: short,
		Args:  exactArgs(1, "a routine name"),
		RunE: a.withEngine(func(ctx context.Context, l *events.Log, args []string) error {
			var ch engine.RoutineChanged
			if err := request(ctx, l, endpoint, engine.RoutineRequest{Name: args[0]}, &ch); err != nil {
				return err
			}
			if a.json {
				return a.printJSON(ch)
			}
			if !ch.Changed {
				a.errorf("routine %s was already %sd\n", ch.Name, verb)
			}
			return nil
		}),
	}
}

func (a *app) routineRunNowCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "run-now <name>",
		Short: "Fire a routine once now, outside its schedule; prints the run id",
		Args:  exactArgs(1, "a routine name"),
		RunE: a.withEngine(func(ctx context.Context, l *events.Log, args []string) error {
			var sub engine.Submitted
			if err := request(ctx, l, engine.EndpointRoutineRunNow, engine.RoutineRequest{Name: args[0]}, &sub); err != nil {
				return err
			}
			if a.json {
				return a.printJSON(sub)
			}
			a.printf("%s\n", sub.RunID)
			return nil
		}),
	}
}
