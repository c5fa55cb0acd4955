package projector

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// lostSuffix, followed by the Unix time, names a views file set aside
// because its log was lost.
const lostSuffix = ".lost-"

// SetAsideLost renames the views file at path to path.lost-<unix time>
// (then -2, -3… if taken) and returns the new name: the views of a log
// that was lost, kept for inspection, so that the next engine rebuilds its
// views from the log it finds. It returns "" when there is no file. The
// file's lock is held for the rename, so a file an engine uses is not
// moved: that is ErrLocked, after waiting up to timeout. The views'
// snapshot (see SnapshotPath), a copy of the same lost views, goes with
// them, as path.lost-<unix time>.snap.
func SetAsideLost(path string, timeout time.Duration) (string, error) {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return setAsideLostSnapshot(path, "")
	}
	if err != nil {
		return "", fmt.Errorf("projector: setting %s aside: %w", path, err)
	}
	defer f.Close() // releases the lock, after the rename
	if err := lockFile(f, timeout); err != nil {
		return "", err
	}
	aside := asideName(path, lostSuffix, time.Now())
	if err := os.Rename(path, aside); err != nil {
		return "", fmt.Errorf("projector: setting %s aside: %w", path, err)
	}
	if err := syncDir(filepath.Dir(path)); err != nil {
		return "", fmt.Errorf("projector: setting %s aside: %w", path, err)
	}
	return setAsideLostSnapshot(path, aside)
}

// setAsideLostSnapshot moves the snapshot of the lost views at path beside
// them, as aside + ".snap" (aside is where the views went, or "" when
// there were none; the snapshot is then named as they would have been). It
// returns aside, or the snapshot's new name when there were no views.
func setAsideLostSnapshot(path, aside string) (string, error) {
	if _, err := os.Stat(SnapshotPath(path)); errors.Is(err, fs.ErrNotExist) {
		return aside, nil
	}
	to := SnapshotPath(aside)
	if aside == "" {
		to = SnapshotPath(asideName(path, lostSuffix, time.Now()))
	}
	if err := os.Rename(SnapshotPath(path), to); err != nil {
		return "", fmt.Errorf("projector: setting %s aside: %w", SnapshotPath(path), err)
	}
	if err := syncDir(filepath.Dir(path)); err != nil {
		return "", fmt.Errorf("projector: setting %s aside: %w", SnapshotPath(path), err)
	}
	if aside == "" {
		return to, nil
	}
	return aside, nil
}
