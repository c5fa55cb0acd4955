// Command dbos is DBOS Transact's side of bench-peers: the workloads as
// DBOS workflows whose steps are dbos.RunAsStep (W1, W3) and dbos.Go (W2),
// on the PostgreSQL database the driver names, with DBOS's defaults. Each
// step's result is recorded in Postgres before the workflow goes on, so a
// step's durability is the commit's: the driver's cluster runs with fsync
// and synchronous_commit on.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/dbos-inc/dbos-transact-golang/dbos"

	"github.com/orbitrun/orbit/internal/bench/peers/side"
)

const module = "github.com/dbos-inc/dbos-transact-golang"

// job is a workflow's input: how many steps or items, how many at once,
// and whether each forks echo.
type job struct {
	N     int  `json:"n"`
	Width int  `json:"width"`
	Fork  bool `json:"fork"`
}

func main() {
	url := flag.String("database-url", "", "the system database, postgres://…")
	pg := flag.String("postgres", "unknown", "the server's version, for the hello")
	flag.Parse()
	if *url == "" {
		side.Fail(errors.New("dbos: -database-url is required"))
	}
	if err := run(*url, *pg); err != nil {
		side.Fail(fmt.Errorf("dbos: %w", err))
	}
}

func run(url, pg string) error {
	ctx := context.Background()
	d, err := dbos.NewContext(ctx, dbos.Config{
		DatabaseURL: url,
		AppName:     "bench-peers",
		Logger:      slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
	})
	if err != nil {
		return err
	}
	dbos.RegisterWorkflow(d, sequential)
	dbos.RegisterWorkflow(d, fanOut)
	if err := dbos.Launch(d); err != nil {
		return err
	}
	defer func() { _ = dbos.Shutdown(d, 10*time.Second) }()
	hello := side.Hello{
		System:     "dbos",
		Versions:   map[string]string{"DBOS Transact Go": side.ModuleVersion(module), "PostgreSQL": pg},
		Durability: "each step's result committed to PostgreSQL before the workflow goes on",
	}
	return side.Serve(ctx, os.Stdin, os.Stdout, hello, func(_ context.Context, req side.Request) error {
		return workload(d, req)
	})
}

func workload(d dbos.Context, req side.Request) error {
	switch req.Workload {
	case side.Sequential:
		return await(d, sequential, job{N: req.N, Fork: req.Fork}, req.N)
	case side.FanOut:
		return await(d, fanOut, job{N: req.N, Width: req.Width, Fork: req.Fork}, req.N)
	case side.Runs:
		return side.Concurrently(req.N, func(int) error {
			return await(d, sequential, job{N: 3, Fork: req.Fork}, 3)
		})
	}
	return fmt.Errorf("no workload %q", req.Workload)
}

// await runs a workflow to its end and checks its outputs.
func await(d dbos.Context, wf dbos.Workflow[job, []string], in job, n int) error {
	h, err := dbos.RunWorkflow(d, wf, in)
	if err != nil {
		return err
	}
	out, err := h.GetResult()
	if err != nil {
		return err
	}
	return side.CheckSequence(out, n)
}

// sequential runs in.N steps one after another.
func sequential(ctx dbos.Context, in job) ([]string, error) {
	out := make([]string, in.N)
	for i := range in.N {
		s, err := dbos.RunAsStep(ctx, func(c context.Context) (string, error) { return side.Step(c, i, in.Fork) })
		if err != nil {
			return nil, err
		}
		out[i] = s
	}
	return out, nil
}

// fanOut runs in.N steps, in.Width at once, and gathers their outputs.
// A slot is freed once a step's result is recorded, not when its body
// returns. Steps are started in order, so their ids are deterministic
// as dbos.Go requires.
func fanOut(ctx dbos.Context, in job) ([]string, error) {
	slots := make(chan struct{}, in.Width)
	outcomes := make([]dbos.StepOutcome[string], in.N)
	var wg sync.WaitGroup
	for i := range in.N {
		slots <- struct{}{}
		ch, err := dbos.Go(ctx, func(c context.Context) (string, error) { return side.Step(c, i, in.Fork) })
		if err != nil {
			wg.Wait()
			return nil, err
		}
		wg.Go(func() {
			outcomes[i] = <-ch
			<-slots
		})
	}
	wg.Wait()
	out := make([]string, in.N)
	for i, o := range outcomes {
		if o.Err != nil {
			return nil, o.Err
		}
		out[i] = o.Result
	}
	return out, nil
}
