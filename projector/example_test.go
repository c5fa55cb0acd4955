package projector_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/projector"
)

// A run's view, read after the write that changed it.
func Example() {
	dir, err := os.MkdirTemp("", "orbit-projector-example")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	ctx := context.Background()

	log, err := events.Open(ctx, events.Config{StoreDir: filepath.Join(dir, "nats"), Redactor: &events.Redactor{}})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer log.Close()
	p, err := projector.Open(ctx, projector.Config{Path: filepath.Join(dir, "views.db"), Source: log})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer p.Close()
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- p.Run(runCtx) }()
	defer func() { stop(); <-done }()

	id := "01JEXAMPLE0000000000000001"
	if _, err := log.Append(ctx, events.Event{Type: events.RunRequested, RunID: id}, events.RunRequestedData{JobName: "ci"}); err != nil {
		fmt.Println(err)
		return
	}
	res, err := log.Append(ctx, events.Event{Type: events.RunStarted, RunID: id}, events.RunStartedData{Engine: "engine-1"})
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := p.WaitFor(ctx, res.Seq); err != nil {
		fmt.Println(err)
		return
	}
	v, err := p.RunView(ctx, id)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(v.Job, v.State, v.Engine)
	// Output: ci running engine-1
}
