package main

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/projector"
)

func (a *app) runLogsCommand() *cobra.Command {
	var step string
	cmd := &cobra.Command{
		Use:   "logs [run_id] [-s STEP]",
		Short: "Print what a run's processes wrote: shell steps' and CLI agents' stdout and stderr",
		Long: `Print the stdout and stderr of the processes a run ran (default: the latest
run): its shell steps and its CLI agents, whole, read from the log and its
blobs.

With -s STEP, the last attempt of that step: its stdout on stdout and its
stderr on stderr, as the process wrote them (orbit run logs R -s build >
build.log). A STEP that ran no process itself (a loop, a parallel step)
selects the processes under it. Without -s, every process of the run, in
the order they ended, each stream under a header:

  ==> build (attempt 1): stdout, 1204 bytes <==

With --json, a list of {step_key, attempt, event, stdout, stderr}. Output a
step wrote before its stream was kept whole (a failed step's in logs
recorded before it was, past its last 512 bytes) is said to be missing.

Exit status: 0 printed, 2 no such run, or a STEP that ran no process, 3 no
engine could be reached.`,
		Args: cobra.MaximumNArgs(1),
		RunE: a.withEngine(func(ctx context.Context, l *events.Log, args []string) error {
			runID, err := resolveRunID(ctx, l, optional(args))
			if err != nil {
				return err
			}
			procs, err := runProcesses(ctx, l, runID)
			if err != nil {
				return err
			}
			raw := false
			if step != "" {
				if procs, raw = selectProcesses(procs, step); len(procs) == 0 {
					v, err := getRun(ctx, l, runID)
					if err != nil {
						return err
					}
					if !slices.ContainsFunc(v.Steps, func(s projector.StepView) bool { return s.Key == step || strings.HasPrefix(s.Key, step+"/") }) {
						return usageErr("run %s has no step %q (orbit run show %s lists its steps)", runID, clip(step), runID)
					}
					return usageErr("step %s of run %s ran no process (orbit run show %s lists its steps)", clip(step), runID, runID)
				}
			}
			if a.json {
				if procs == nil {
					procs = []process{}
				}
				return a.printJSON(procs)
			}
			if raw {
				a.printf("%s", procs[0].Stdout)
				a.errorf("%s", procs[0].Stderr)
				return nil
			}
			for _, p := range procs {
				for _, s := range []struct{ name, text string }{{"stdout", p.Stdout}, {"stderr", p.Stderr}} {
					if s.text == "" {
						continue
					}
					a.printf("==> %s (attempt %d): %s, %d bytes <==\n%s", p.StepKey, p.Attempt, s.name, len(s.text), s.text)
					if !strings.HasSuffix(s.text, "\n") {
						a.printf("\n")
					}
				}
			}
			return nil
		}),
	}
	cmd.Flags().StringVarP(&step, "step", "s", "", "the step (key) whose last attempt to print; or the steps under it")
	return cmd
}

// process is what one process of a run wrote.
type process struct {
	StepKey string `json:"step_key"`
	Attempt int    `json:"attempt"`
	Event   string `json:"event"` // shell.exited or cli.invocation.finished
	Stdout  string `json:"stdout"`
	Stderr  string `json:"stderr"`
}

// runProcesses reads the processes a run ran, in the order they ended,
// with their streams whole: from the stream's blob, else from its preview
// when that holds it all, else from the step's output (a successful shell
// step keeps a short stream there), else the preview, said to be cut.
func runProcesses(ctx context.Context, l *events.Log, runID string) ([]process, error) {
	evs, err := l.Read(ctx, events.FollowOptions{Filters: []string{
		events.EventSubject(events.AggregateRun, runID, events.ShellExited),
		events.EventSubject(events.AggregateRun, runID, events.CLIInvocationFinished),
		events.EventSubject(events.AggregateRun, runID, events.StepFinished),
	}})
	if err != nil {
		return nil, &exitError{code: exitUnavailable, err: err}
	}
	outputs := map[string]map[string]any{} // by step key and attempt
	for _, ev := range evs {
		if ev.Type != events.StepFinished {
			continue
		}
		var d events.StepFinishedData
		if ev.Decode(&d) == nil {
			if out, ok := d.Output.(map[string]any); ok {
				outputs[fmt.Sprintf("%s\x00%d", ev.StepKey, d.Attempt)] = out
			}
		}
	}
	var procs []process
	for _, ev := range evs {
		var (
			attempt        int
			stdout, stderr events.OutputStream
		)
		switch ev.Type {
		case events.ShellExited:
			var d events.ShellExitedData
			if err := ev.Decode(&d); err != nil {
				return nil, err
			}
			attempt, stdout, stderr = d.Attempt, d.Stdout, d.Stderr
		case events.CLIInvocationFinished:
			var d events.CLIInvocationFinishedData
			if err := ev.Decode(&d); err != nil {
				return nil, err
			}
			attempt, stdout, stderr = d.Attempt, d.Stdout, d.Stderr
		default:
			continue
		}
		out := outputs[fmt.Sprintf("%s\x00%d", ev.StepKey, attempt)]
		p := process{StepKey: ev.StepKey, Attempt: attempt, Event: ev.Type}
		if p.Stdout, err = streamText(ctx, l, stdout, out, "stdout"); err != nil {
			return nil, err
		}
		if p.Stderr, err = streamText(ctx, l, stderr, out, "stderr"); err != nil {
			return nil, err
		}
		procs = append(procs, p)
	}
	return procs, nil
}

// streamText is a recorded stream whole, or its preview with a line that
// says how much is missing.
func streamText(ctx context.Context, l *events.Log, st events.OutputStream, out map[string]any, name string) (string, error) {
	if st.Blob != nil {
		data, err := l.GetBlob(ctx, st.Blob.Digest)
		if err != nil {
			return "", err
		}
		return string(data), nil
	}
	if int64(len(st.Preview)) >= st.Size {
		return st.Preview, nil
	}
	if s, ok := out[name].(string); ok && int64(len(s)) == st.Size {
		return s, nil
	}
	return fmt.Sprintf("[the first %d of %d bytes were not kept]\n%s", st.Size-int64(len(st.Preview)), st.Size, st.Preview), nil
}

// selectProcesses picks what -s STEP names: the last attempt of the step
// with that key, printed raw (true); or, when it ran no process itself,
// the processes of the steps under it.
func selectProcesses(procs []process, step string) ([]process, bool) {
	var last *process
	var under []process
	for i := range procs {
		switch p := &procs[i]; {
		case p.StepKey == step:
			if last == nil || p.Attempt >= last.Attempt {
				last = p
			}
		case strings.HasPrefix(p.StepKey, step+"/"):
			under = append(under, *p)
		}
	}
	if last != nil {
		return []process{*last}, true
	}
	return under, false
}
