// Command temporal is Temporal's side of bench-peers: a worker with the
// Go SDK's defaults on the dev server the driver started, and the
// workloads as workflows of ordinary activities (W1 and W3 one after
// another, W2 at most Width outstanding, then their results gathered),
// started and awaited through the SDK's client.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"sync/atomic"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/orbitrun/orbit/internal/bench/peers/side"
)

const taskQueue = "bench-peers"

// job is a workflow's input: how many activities, how many at once, and
// whether each forks echo.
type job struct {
	N     int  `json:"n"`
	Width int  `json:"width"`
	Fork  bool `json:"fork"`
}

func main() {
	address := flag.String("address", "", "the dev server's frontend, host:port")
	server := flag.String("server", "unknown", "the dev server's version, for the hello")
	durability := flag.String("durability", "", "how the dev server stores its state, for the hello")
	flag.Parse()
	if *address == "" {
		side.Fail(errors.New("temporal: -address is required"))
	}
	if err := run(*address, *server, *durability); err != nil {
		side.Fail(fmt.Errorf("temporal: %w", err))
	}
}

func run(address, server, durability string) error {
	ctx := context.Background()
	c, err := dial(ctx, address)
	if err != nil {
		return err
	}
	defer c.Close()
	w := worker.New(c, taskQueue, worker.Options{})
	w.RegisterWorkflow(Sequential)
	w.RegisterWorkflow(FanOut)
	w.RegisterActivity(Step)
	if err := w.Start(); err != nil {
		return err
	}
	defer w.Stop()
	hello := side.Hello{
		System:     "temporal",
		Versions:   map[string]string{"Temporal dev server": server, "Temporal Go SDK": side.ModuleVersion("go.temporal.io/sdk")},
		Durability: durability,
	}
	var ids atomic.Int64
	start := func(ctx context.Context, wf any, in job, n int) error {
		opts := client.StartWorkflowOptions{ID: "bench-" + strconv.FormatInt(ids.Add(1), 10) + "-" + strconv.FormatInt(time.Now().UnixNano(), 36), TaskQueue: taskQueue}
		r, err := c.ExecuteWorkflow(ctx, opts, wf, in)
		if err != nil {
			return err
		}
		var out []string
		if err := r.Get(ctx, &out); err != nil {
			return err
		}
		return side.CheckSequence(out, n)
	}
	return side.Serve(ctx, os.Stdin, os.Stdout, hello, func(ctx context.Context, req side.Request) error {
		switch req.Workload {
		case side.Sequential:
			return start(ctx, Sequential, job{N: req.N, Fork: req.Fork}, req.N)
		case side.FanOut:
			return start(ctx, FanOut, job{N: req.N, Width: req.Width, Fork: req.Fork}, req.N)
		case side.Runs:
			return side.Concurrently(req.N, func(int) error {
				return start(ctx, Sequential, job{N: 3, Fork: req.Fork}, 3)
			})
		}
		return fmt.Errorf("no workload %q", req.Workload)
	})
}

// rpcTimeout replaces the SDK's 10s for each call to the server: 200
// workflows started at once on the dev server's SQLite take longer than
// that to be accepted on a loaded machine, and W3 would fail instead of
// being measured.
const rpcTimeout = 5 * time.Minute

// dial connects to the dev server, waiting for it to serve (it creates
// its database and namespace first).
func dial(ctx context.Context, address string) (client.Client, error) {
	quiet := log.NewStructuredLogger(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
	deadline := time.Now().Add(2 * time.Minute)
	for {
		c, err := client.DialContext(ctx, client.Options{HostPort: address, Namespace: "default", Logger: quiet, RPCTimeout: rpcTimeout})
		if err == nil {
			return c, nil
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("the dev server at %s did not serve within 2m: %w", address, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func activities(ctx workflow.Context) workflow.Context {
	return workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: time.Minute})
}

// Sequential runs in.N activities one after another.
func Sequential(ctx workflow.Context, in job) ([]string, error) {
	ctx = activities(ctx)
	out := make([]string, in.N)
	for i := range in.N {
		if err := workflow.ExecuteActivity(ctx, Step, i, in.Fork).Get(ctx, &out[i]); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// FanOut runs in.N activities with at most in.Width outstanding, then
// gathers their results.
func FanOut(ctx workflow.Context, in job) ([]string, error) {
	ctx = activities(ctx)
	futures := make([]workflow.Future, in.N)
	done := workflow.NewSelector(ctx)
	outstanding := 0
	for i := range in.N {
		if outstanding == in.Width {
			done.Select(ctx)
			outstanding--
		}
		futures[i] = workflow.ExecuteActivity(ctx, Step, i, in.Fork)
		done.AddFuture(futures[i], func(workflow.Future) {})
		outstanding++
	}
	out := make([]string, in.N)
	for i, f := range futures {
		if err := f.Get(ctx, &out[i]); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// Step is the activity: side.Step.
func Step(ctx context.Context, i int, fork bool) (string, error) {
	return side.Step(ctx, i, fork)
}
