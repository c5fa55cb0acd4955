package activity

import (
	"context"
	"time"

	"github.com/orbitrun/orbit/events"
)

// workspaceResource is the orbit_locks resource of a repository (by its
// absolute path): one Groundhog run, or one abandon, works there at a time.
func workspaceResource(path string) string { return "workspace:" + path }

// ReserveWorkspace takes the repository at path (absolute) in orbit_locks
// for owner, the same reservation a Groundhog run holds while it works
// there, or returns who holds it ("" when it was taken). An owner that is
// not a run (an abandon) must give a ttl: a reservation is otherwise
// stale only once its run has finished. Reserving again what owner holds
// renews it.
func ReserveWorkspace(ctx context.Context, log *events.Log, owner, what, path string, ttl time.Duration) (heldBy string, err error) {
	return newLocks(log).tryReserve(ctx, owner, what, []string{workspaceResource(path)}, ttl)
}

// ReleaseWorkspace gives back owner's reservation of the repository at
// path; releasing what owner does not hold does nothing.
func ReleaseWorkspace(ctx context.Context, log *events.Log, owner, path string) error {
	_, err := newLocks(log).release(ctx, owner, []string{workspaceResource(path)})
	return err
}
