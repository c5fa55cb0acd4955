package main

import (
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/orbitrun/orbit/internal/engine"
	"github.com/orbitrun/orbit/projector"
)

// acceptNewLog is `orbit init --new-log`: it sets the views of a lost log
// aside, so that the next engine on root rebuilds them from the log it
// finds instead of refusing it (DESIGN §2).
func (a *app) acceptNewLog(root string) error {
	views := filepath.Join(engine.StateDir(root), "views.db")
	aside, err := projector.SetAsideLost(views, time.Second)
	if errors.Is(err, projector.ErrLocked) {
		return &exitError{code: exitUnavailable, err: fmt.Errorf("%w: %s is in use; stop the engine (orbit serve, or the background engine in %s) first", engine.ErrAlreadyRunning, views, filepath.Join(engine.StateDir(root), "engine.json"))}
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
