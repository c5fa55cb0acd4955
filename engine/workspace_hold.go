package engine

import (
	"context"
	"sync"
	"time"

	"github.com/orbitrun/orbit/activity"
	"github.com/orbitrun/orbit/events"
)

// holdTTL bounds the workspace reservation a person's act on a task takes
// (abandon, approve, rewind): it is not a run, so nothing else makes it
// stale if the engine dies holding it. The act renews it every
// holdHeartbeat while it works, so an act that takes longer keeps it, and
// a hold whose engine was killed is taken over holdTTL after its last
// renewal, by any engine of a shared server: no process identity need be
// proved, only that the holder stopped renewing.
const (
	holdTTL       = 30 * time.Second
	holdHeartbeat = holdTTL / 3
)

// workspaceHold returns the reserve and release functions with which a
// person's act on a task (abandon, approve, rewind: verb) holds the task's
// workspace, as a run holds it, under an owner of its own. From a
// successful reserve to release, the hold is renewed every holdHeartbeat.
func (e *Engine) workspaceHold(verb, taskID string) (reserve func(context.Context, string) (string, error), release func(context.Context, string) error) {
	owner := verb + "-" + events.NewID()
	what := "groundhog " + verb + " " + taskID
	var mu sync.Mutex
	var stop context.CancelFunc
	var done chan struct{}
	reserve = func(ctx context.Context, path string) (string, error) {
		heldBy, err := activity.ReserveWorkspace(ctx, e.log, owner, what, path, holdTTL)
		if err != nil || heldBy != "" {
			return heldBy, err
		}
		mu.Lock()
		defer mu.Unlock()
		if stop == nil {
			var hctx context.Context
			hctx, stop = context.WithCancel(context.WithoutCancel(ctx))
			done = make(chan struct{})
			go e.renewHold(hctx, done, owner, what, path)
		}
		return "", nil
	}
	release = func(ctx context.Context, path string) error {
		mu.Lock()
		if stop != nil {
			stop()
			<-done
			stop = nil
		}
		mu.Unlock()
		return activity.ReleaseWorkspace(ctx, e.log, owner, path)
	}
	return reserve, release
}

// renewHold reserves the workspace again for owner every holdHeartbeat
// until ctx ends, which pushes its expiry on. A renewal that finds another
// holder (the engine stalled past holdTTL) is logged: the act goes on, as
// it would have past the expiry of a hold it never renewed.
func (e *Engine) renewHold(ctx context.Context, done chan<- struct{}, owner, what, path string) {
	defer close(done)
	t := time.NewTicker(holdHeartbeat)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		heldBy, err := activity.ReserveWorkspace(ctx, e.log, owner, what, path, holdTTL)
		switch {
		case ctx.Err() != nil:
			return
		case err != nil:
			e.logger.Warn("renewing a workspace hold", "owner", owner, "workspace", path, "err", err)
		case heldBy != "":
			e.logger.Warn("a workspace hold lapsed and was taken", "owner", owner, "workspace", path, "held_by", heldBy)
		}
	}
}
