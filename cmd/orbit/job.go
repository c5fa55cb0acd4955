package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/user"
	"strings"

	"github.com/spf13/cobra"

	"github.com/orbitrun/orbit/assets"
	"github.com/orbitrun/orbit/engine"
	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/executor"
	"github.com/orbitrun/orbit/tracing"
)

// runOptions are the flags of `orbit job run` and `orbit run`.
type runOptions struct {
	input   string
	detach  bool
	backend string
	// traceparent is the caller's W3C traceparent: the run's span is its
	// child (see tracing).
	traceparent string
}

func (o *runOptions) register(a *app, cmd *cobra.Command) {
	a.progressFlag(cmd)
	cmd.Flags().StringVarP(&o.input, "input", "i", "", "job input as JSON, or @FILE (@- for stdin); merged over the job's default_input")
	cmd.Flags().BoolVarP(&o.detach, "detach", "d", false, "print the run id and return without waiting")
	cmd.Flags().StringVar(&o.backend, "backend", "", "backend for agent_loop activities with backend: auto (http or cli)")
	cmd.Flags().StringVar(&o.traceparent, "traceparent", os.Getenv("TRACEPARENT"), "W3C traceparent the run's trace continues (env TRACEPARENT)")
}

func (a *app) jobCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "job", Short: "Run, list and show jobs"}
	var opts runOptions
	run := &cobra.Command{
		Use:   "run <name|file.yaml>",
		Short: "Run a job and follow it to its end",
		Long: `Run a job by catalog name or from a YAML file, printing each step as it starts
and ends, then the run's final state. The run id is printed alone on stdout;
progress goes to stderr. With --json the final run view is printed instead.

Exit status: 0 the run succeeded, 1 it did not, 2 the job or input is invalid,
3 no engine could be reached.`,
		Args: exactArgs(1, "a job name or file"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.runJob(cmd.Context(), args[0], opts)
		},
	}
	opts.register(a, run)
	cmd.AddCommand(run)
	cmd.AddCommand(a.catalogCommands(jobAssets)...)
	cmd.AddCommand(a.jobPauseCommand(false), a.jobPauseCommand(true))
	return cmd
}

func (a *app) activityCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "activity", Short: "List and show activities"}
	cmd.AddCommand(a.catalogCommands(activityAssets)...)
	return cmd
}

// warnCatalog says, in one line, that files of the catalog were left out:
// a job that does not depend on them runs, and `orbit job list` says why.
func (a *app) warnCatalog(cat *assets.Catalog) {
	files := map[string]bool{}
	for _, p := range cat.Problems() {
		files[p.File] = true
	}
	if len(files) > 0 {
		a.errorf("orbit: warning: %d catalog file(s) could not be loaded and were left out (orbit job list shows why)\n", len(files))
	}
}

// loadJob finds a job by catalog name, or reads it from a file when the
// argument names one.
func loadJob(cat *assets.Catalog, target string) (*assets.Job, error) {
	if strings.HasSuffix(target, ".yaml") || strings.HasSuffix(target, ".yml") || strings.ContainsRune(target, os.PathSeparator) {
		if _, err := os.Stat(target); err != nil {
			return nil, usageErr("%s: %v", target, err)
		}
		return cat.JobFile(target)
	}
	return cat.Job(target)
}

// parseInput reads --input: inline JSON, @FILE or @- for stdin. A run's
// input is a JSON object, merged over the job's default_input: anything
// else is a usage error.
func (a *app) parseInput(text string) (any, error) {
	v, err := a.parseJSONFlag("--input", "a run's input", text)
	if err != nil || text == "" {
		return v, err
	}
	if _, ok := v.(map[string]any); !ok {
		return nil, usageErr(`--input: a run's input is a JSON object, such as {"name": "Ada"}, not %s; its keys are merged over the job's default_input (leave --input out to run on the default_input alone)`, jsonKind(v))
	}
	return v, nil
}

// jsonKind names the kind of a decoded JSON value, for messages.
func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case float64:
		return "a number"
	case string:
		return "a string"
	case []any:
		return "a list"
	}
	return "an object"
}

// parseJSONFlag reads the JSON value of a flag: inline JSON, @FILE or @-
// for stdin; what names what the value is, for the size limit's message.
// Anything else is a usage error naming the flag.
func (a *app) parseJSONFlag(flag, what, text string) (any, error) {
	if text == "" {
		return nil, nil
	}
	data := []byte(text)
	source := flag
	if name, ok := strings.CutPrefix(text, "@"); ok {
		var err error
		if name == "-" {
			data, err = io.ReadAll(a.stdin)
			source = flag + " @- (stdin)"
		} else {
			data, err = os.ReadFile(name)
			source = name
		}
		if err != nil {
			return nil, usageErr("%s: %v", flag, err)
		}
	}
	if len(data) > maxInputBytes {
		return nil, usageErr("%s: %s is %.1f MiB, over the limit of %d MiB (it is recorded in the log; pass a path to large data instead)",
			source, what, float64(len(data))/(1<<20), maxInputBytes>>20)
	}
	var v any
	if err := json.Unmarshal(data, &v); err != nil {
		return nil, usageErr("%s: not valid JSON: %v", source, err)
	}
	return v, nil
}

// maxInputBytes bounds a run's input. Inputs past the size of one message
// are stored as blobs, but a run's input is read whole by every engine
// that resumes it.
const maxInputBytes = 16 << 20

func requester() string {
	name := "unknown"
	if u, err := user.Current(); err == nil {
		name = u.Username
	}
	host, _ := os.Hostname()
	return "cli:" + name + "@" + host
}

// runJob loads, validates and submits a job, then follows the run.
func (a *app) runJob(ctx context.Context, target string, opts runOptions) error {
	if opts.backend != "" {
		os.Setenv("ORBIT_BACKEND", opts.backend)
	}
	cat, err := a.projectCatalog()
	if err != nil {
		return err
	}
	job, err := loadJob(cat, target)
	if err != nil {
		return err
	}
	a.warnCatalog(cat)
	input, err := a.parseInput(opts.input)
	if err != nil {
		return err
	}
	req, err := executor.NewRunRequest(job, input, requester())
	if err != nil {
		return err
	}
	// The jobs the run invokes resolve backend: auto as this one did.
	req.Backend = cat.Backend()
	if opts.traceparent != "" {
		if _, err := tracing.ParseTraceparent(opts.traceparent); err != nil {
			return usageErr("--traceparent: %v", err)
		}
		req.Traceparent = opts.traceparent
	}
	if err := req.PinEnv(os.LookupEnv); err != nil {
		return err
	}
	l, err := a.connect(ctx)
	if err != nil {
		return err
	}
	defer l.Close()
	return a.submit(ctx, l, req, opts.detach)
}

// submit sends a run request and, unless detached, follows the run to its
// end: its events, and those of filters besides. The run id goes to stdout
// (or, with --json, the final run view).
func (a *app) submit(ctx context.Context, l *events.Log, req *executor.RunRequest, detach bool, filters ...string) error {
	return a.submitThen(ctx, l, req, detach, a.json, filters...)
}

// submitThen is submit that prints the final run view only when view is
// set (a command that prints a report of its own instead).
func (a *app) submitThen(ctx context.Context, l *events.Log, req *executor.RunRequest, detach, view bool, filters ...string) error {
	info, err := storeAccepts(ctx, l)
	if err != nil {
		return err
	}
	a.warnSettings(info, &req.Job)
	a.warnRestart(info)
	var feed *runFeed
	if !detach {
		var err error
		if feed, err = a.followRun(ctx, l, req.RunID, append([]string{events.RunFilter(req.RunID)}, filters...)); err != nil {
			return err
		}
		defer feed.stop()
	}
	if err := request(ctx, l, engine.EndpointSubmit, req, &engine.Submitted{}); err != nil {
		return fmt.Errorf("submitting the run: %w", err)
	}
	if detach {
		if a.json {
			return a.printJSON(map[string]string{"run_id": req.RunID, "job": req.Job.Name})
		}
		a.printf("%s\n", req.RunID)
		return nil
	}
	if !a.json {
		a.printf("%s\n", req.RunID)
	}
	return a.follow(ctx, feed, req.Job.Name, view)
}

// storeAccepts asks the engine whether its event store takes writes: a
// run submitted to a full store would wait, unseen, until space is freed.
// It returns what the engine said about itself.
func storeAccepts(ctx context.Context, l *events.Log) (*engine.InfoReply, error) {
	var info engine.InfoReply
	if err := request(ctx, l, engine.EndpointInfo, nil, &info); err != nil {
		return nil, err
	}
	if info.StoreFull != "" {
		return nil, fmt.Errorf("submitting the run: %w: %s", events.ErrStoreFull, info.StoreFull)
	}
	return &info, nil
}

// follow prints a run's progress from feed until run.finished, then the
// final state (or with --json the final run view), and maps the state to
// the exit code. Interrupted, it says how to cancel the run, which goes on,
// and ends with exit code 130 (128 + SIGINT), as shells do.
func (a *app) follow(ctx context.Context, feed *runFeed, job string, view bool) error {
	runID := feed.runID
	p := newProgress(a.stderr, runID, job, a.progress)
	feed.quiet = func(ctx context.Context, l *events.Log) {
		if len(p.children) == 0 {
			return
		}
		var gates executor.Gates
		if request(ctx, l, engine.EndpointRunGates, engine.RunGates{RunID: runID}, &gates) == nil {
			p.childGates(gates.Gates)
		}
	}
	for {
		ev, err := feed.next(ctx)
		if ctx.Err() != nil {
			a.errorf("stopped following run %s; it goes on (orbit run tail %s; orbit run cancel %s)\n", runID, runID, runID)
			return &exitError{code: exitInterrupted}
		}
		if err != nil {
			return err
		}
		p.event(ev)
		if ev.Type != events.RunFinished {
			continue
		}
		var d events.RunFinishedData
		if err := ev.Decode(&d); err != nil {
			return err
		}
		if view {
			var v json.RawMessage
			if err := request(ctx, feed.log(), engine.EndpointRun, engine.RunQuery{RunID: runID, MinSeq: ev.Seq}, &v); err != nil {
				return err
			}
			if err := a.printJSON(v); err != nil {
				return err
			}
		}
		if d.State != events.StateSuccess {
			return unsuccessful
		}
		return nil
	}
}

func exactArgs(n int, what string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) != n {
			return usageErr("%s needs %s\nUsage: %s", cmd.CommandPath(), what, cmd.UseLine())
		}
		return nil
	}
}
