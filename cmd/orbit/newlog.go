package main

import (
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/orbitrun/orbit/engine"
	"github.com/orbitrun/orbit/projector"
)

// acceptNewLog is `orbit init --new-log`: it sets the views of a lost log
// aside, so that the next engine on root rebuilds them from the log it
// finds instead of refusing it (DESIGN §2).
func (a *app) acceptNewLog(root string) error {
	views := filepath.Join(engine.StateDir(root), "views.db")
	aside, err := projector.SetAsideLost(views, time.Second)
	if errors.Is(err, projector.ErrLocked) {
		return usageErr("nothing was set aside: %s and holds its views. %s, then run orbit init --new-log again",
			runningEngine(root), stopEngine(root))
	}
	if err != nil {
		return err
	}
	if aside == "" {
		a.printf("No views to set aside: the next engine builds them from the log it finds\n")
		return nil
	}
	a.printf("Set the views aside as %s: the next engine rebuilds them from the log it finds\n", aside)
	return nil
}

// runningEngine names the engine serving root, as its engine.json says.
func runningEngine(root string) string {
	info, err := engine.ReadInfo(root)
	switch {
	case err != nil:
		return "an engine serves this root"
	case info.Background:
		return fmt.Sprintf("the background engine (pid %d, started by an orbit command) serves this root", info.PID)
	}
	return fmt.Sprintf("an engine (orbit serve, pid %d) serves this root", info.PID)
}

// stopEngine says how to stop the engine serving root.
func stopEngine(root string) string {
	info, err := engine.ReadInfo(root)
	switch {
	case err != nil:
		return "Stop it (its pid is in " + filepath.Join(engine.StateDir(root), "engine.json") + ")"
	case info.Background:
		return "Stop it with orbit engine stop (or wait: it exits after its idle timeout, engine.idle_timeout_seconds)"
	}
	return fmt.Sprintf("Stop that orbit serve with orbit engine stop (or Ctrl-C where it runs, or kill %d)", info.PID)
}
