package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/orbitrun/orbit/assets"
	"github.com/orbitrun/orbit/engine"
	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/executor"
)

// orbitSide is Orbit's side: an engine on root in this process (the
// embedded NATS server, strict durability), and a client that submits
// each run through the engine's API (runs.submit, as `orbit job run`
// does) and waits for its run.finished, so that neither the engine's
// start nor the CLI's is counted.
func orbitSide(ctx context.Context, root string, in io.Reader, out io.Writer) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	e, err := engine.Open(ctx, engine.Config{Root: root, Listen: "127.0.0.1:0", Durability: events.DurabilityStrict})
	if err != nil {
		return err
	}
	defer e.Close()
	served := make(chan error, 1)
	go func() { served <- e.Run(ctx) }()
	info, err := awaitEngine(ctx, root, served)
	if err != nil {
		return err
	}
	client, err := events.Dial(ctx, info.URL, events.Config{
		NKeySeedFile: events.CredsFile(engine.CredsDir(root), events.IdentityClient),
		LogKeyFile:   engine.LogKeyPath(root),
		Name:         "bench-peers",
	})
	if err != nil {
		return err
	}
	defer client.Close()
	w, err := newWaiter(ctx, client)
	if err != nil {
		return err
	}
	defer w.stop()
	o := &orbit{client: client, finished: w}
	h := hello{
		System:     "orbit",
		Versions:   map[string]string{"Orbit": engine.Version},
		Durability: "durability " + e.Log().Durability() + " (the embedded JetStream fsyncs each write before it acknowledges it)",
	}
	err = serve(ctx, in, out, h, o.run)
	cancel()
	if rerr := <-served; rerr != nil && !errors.Is(rerr, context.Canceled) && err == nil {
		err = rerr
	}
	return err
}

// awaitEngine waits until the engine serves, as recorded in engine.json.
func awaitEngine(ctx context.Context, root string, served <-chan error) (*engine.Info, error) {
	deadline := time.Now().Add(time.Minute)
	for {
		info, err := engine.ReadInfo(root)
		if err == nil {
			return info, nil
		}
		select {
		case err := <-served:
			return nil, fmt.Errorf("the engine stopped before it served: %w", err)
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("the engine did not serve within a minute: %w", err)
		}
	}
}

// serve is the side's half of the protocol: the hello, then an answer to
// each request read from in.
func serve(ctx context.Context, in io.Reader, out io.Writer, h hello, run func(context.Context, request) error) error {
	say := func(m message) error {
		b, err := json.Marshal(m)
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(out, "%s%s\n", prefix, b)
		return err
	}
	if err := say(message{Hello: &h}); err != nil {
		return err
	}
	sc := bufio.NewScanner(in)
	for sc.Scan() {
		var req request
		if err := json.Unmarshal(sc.Bytes(), &req); err != nil {
			return fmt.Errorf("request %q: %w", sc.Text(), err)
		}
		start := time.Now()
		err := run(ctx, req)
		a := answer{Seconds: time.Since(start).Seconds()}
		if err != nil {
			a.Error = err.Error()
		}
		if err := say(message{Answer: &a}); err != nil {
			return err
		}
	}
	return sc.Err()
}

type orbit struct {
	client   *events.Log
	finished *waiter
}

func (o *orbit) run(ctx context.Context, req request) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	switch req.Workload {
	case sequential:
		job, err := sequentialJob(req.N, req.Fork, 1)
		if err != nil {
			return err
		}
		_, err = o.runJob(ctx, job, nil)
		return err
	case fanOut:
		job, err := fanOutJob(req.Width, req.Fork)
		if err != nil {
			return err
		}
		items := make([]int, req.N)
		for i := range items {
			items[i] = i
		}
		out, err := o.runJob(ctx, job, map[string]any{"items": items})
		if err != nil {
			return err
		}
		return checkItems(out, req.N, req.Fork)
	case runs:
		// All N runs are admitted at once, as the peers start them: the
		// default max_active_runs of 1 would queue them one behind the
		// other.
		job, err := sequentialJob(3, req.Fork, req.N)
		if err != nil {
			return err
		}
		errs := make(chan error, req.N)
		var wg sync.WaitGroup
		for range req.N {
			wg.Go(func() {
				_, err := o.runJob(ctx, job, nil)
				errs <- err
			})
		}
		wg.Wait()
		close(errs)
		return errors.Join(slicesOf(errs)...)
	}
	return fmt.Errorf("no workload %q", req.Workload)
}

func slicesOf(errs <-chan error) []error {
	var all []error
	for err := range errs {
		all = append(all, err)
	}
	return all
}

// runJob submits a run of job through the engine's API and waits for it
// to finish, in success; it returns the run's output.
func (o *orbit) runJob(ctx context.Context, job *assets.Job, input any) (any, error) {
	req, err := executor.NewRunRequest(job, input, "bench-peers")
	if err != nil {
		return nil, err
	}
	done := o.finished.expect(req.RunID)
	if err := o.client.Request(ctx, engine.EndpointSubmit, req, &engine.Submitted{}); err != nil {
		o.finished.forget(req.RunID)
		return nil, fmt.Errorf("submitting the run: %w", err)
	}
	select {
	case ev := <-done:
		var data events.RunFinishedData
		if err := ev.Decode(&data); err != nil {
			return nil, err
		}
		if data.State != events.StateSuccess {
			return nil, fmt.Errorf("run %s of %s ended %s: %v", req.RunID, job.Name, data.State, data.Error)
		}
		return data.Output, nil
	case <-ctx.Done():
		o.finished.forget(req.RunID)
		return nil, fmt.Errorf("run %s of %s: %w", req.RunID, job.Name, ctx.Err())
	}
}

// waiter hands each run.finished to whoever expects that run: one feed for
// every run, so that 200 runs at once need one consumer, not 200.
type waiter struct {
	feed *events.Feed
	mu   sync.Mutex
	runs map[string]chan events.Event
	done chan struct{}
}

func newWaiter(ctx context.Context, l *events.Log) (*waiter, error) {
	feed, err := l.Follow(ctx, events.FollowOptions{Filters: []string{events.TypeFilter(events.AggregateRun, events.RunFinished)}})
	if err != nil {
		return nil, err
	}
	w := &waiter{feed: feed, runs: map[string]chan events.Event{}, done: make(chan struct{})}
	go func() {
		defer close(w.done)
		for ev := range feed.Events() {
			w.mu.Lock()
			ch := w.runs[ev.RunID]
			delete(w.runs, ev.RunID)
			w.mu.Unlock()
			if ch != nil {
				ch <- ev
			}
		}
	}()
	return w, nil
}

func (w *waiter) expect(runID string) <-chan events.Event {
	ch := make(chan events.Event, 1)
	w.mu.Lock()
	w.runs[runID] = ch
	w.mu.Unlock()
	return ch
}

func (w *waiter) forget(runID string) {
	w.mu.Lock()
	delete(w.runs, runID)
	w.mu.Unlock()
}

func (w *waiter) stop() {
	w.feed.Stop()
	<-w.done
}

// sequentialJob is n steps one after another: deterministic echo, or with
// fork a shell step running echo; maxActive of its runs at once.
func sequentialJob(n int, fork bool, maxActive int) (*assets.Job, error) {
	var b strings.Builder
	name := "seq" + strconv.Itoa(n) + variant(fork)
	fmt.Fprintf(&b, "schemaVersion: 2\nkind: Job\nmetadata: {name: %s}\nspec:\n  max_active_runs: %d\n  steps:\n", name, maxActive)
	for i := range n {
		if fork {
			fmt.Fprintf(&b, "    - id: s%d\n      spec: {type: shell, program: echo, args: [\"%d\"], allowed_programs: [echo]}\n", i, i)
		} else {
			fmt.Fprintf(&b, "    - id: s%d\n      spec: {type: deterministic, action: echo, config: {step: %d}}\n", i, i)
		}
	}
	return assets.ParseJob(name+".yaml", []byte(b.String()), nil)
}

// fanOutJob is a fan_out over input.items, width at once, each item a
// deterministic echo or a shell step running echo, then a fan_in of all.
// An item's input is its item alone, as the peers' steps take their
// index: a worker's default input is the run's input with the item set,
// and an echo of that would return the whole list from every item (400
// copies in the fan-in and again in run.finished, two thirds of the run's
// bytes), where a peer's step returns a short string.
func fanOutJob(width int, fork bool) (*assets.Job, error) {
	worker := `{type: deterministic, action: echo, config: {item: "{{ item }}"}}`
	if fork {
		worker = `{type: shell, program: echo, args: ["{{ item }}"], allowed_programs: [echo]}`
	}
	name := "fan" + variant(fork)
	yaml := `schemaVersion: 2
kind: Job
metadata: {name: ` + name + `}
spec:
  steps:
    - id: fan
      fan_out:
        items: "{{ input.items }}"
        max_workers: ` + strconv.Itoa(width) + `
        worker:
          id: w
          default_input: "{{ item }}"
          spec: ` + worker + `
      fan_in: {join: {mode: all}}
`
	return assets.ParseJob(name+".yaml", []byte(yaml), nil)
}

// checkItems returns an error unless out, a W2 run's output, is what its
// n items produce, in order, as the peers check theirs (side.CheckSequence):
// item i's echo {item: i}, or with fork what `echo i` printed.
func checkItems(out any, n int, fork bool) error {
	items, ok := out.([]any)
	if !ok || len(items) != n {
		return fmt.Errorf("the fan-out's output is %.200v, want %d items", out, n)
	}
	for i, item := range items {
		m, _ := item.(map[string]any)
		got, want := fmt.Sprint(m["item"]), strconv.Itoa(i)
		if fork {
			got, want = fmt.Sprint(m["stdout"]), want+"\n"
		}
		if got != want || !fork && len(m) != 1 {
			return fmt.Errorf("item %d's output is %.200v, want %q", i, item, want)
		}
	}
	return nil
}

func variant(fork bool) string {
	if fork {
		return "-fork"
	}
	return ""
}
