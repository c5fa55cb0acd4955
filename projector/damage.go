package projector

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	bolt "go.etcd.io/bbolt"
)

// keepDamaged is how many damaged views files are kept for inspection,
// next to the live one; older ones are deleted.
const keepDamaged = 3

// damagedSuffix, followed by the Unix time, names a views file set aside.
const damagedSuffix = ".corrupt-"

// maxReplacements bounds how many times Open sets a damaged file aside
// before giving up: a fresh file that is damaged too means the fault is not
// the file's.
const maxReplacements = 3

// errReplaced means the damaged file is no longer at the views path:
// another engine set it aside first.
var errReplaced = errors.New("the damaged views file was replaced meanwhile")

// openViews opens the live views file and checks it (see checkFile). A
// damaged file is set aside, with a warning that names it and the damage,
// and replaced by a copy of its snapshot (see SnapshotPath), or by an
// empty file when there is none; Run rebuilds what either lacks from the
// log. A missing file is replaced in the same way.
//
// IMPORTANT: a file is only judged while its lock is held (bbolt takes it
// before it reads anything), and only set aside while it still is, so a
// file another engine uses is ErrLocked, never damaged.
func openViews(path string, timeout time.Duration, log *slog.Logger) (*bolt.DB, error) {
	restored := false
	for range maxReplacements {
		if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
			if restored, err = restoreSnapshot(path, log); err != nil {
				return nil, err
			}
		}
		c, err := openChecked(path, timeout)
		if err != nil {
			return nil, err
		}
		if c.damage == nil {
			return c.db, nil
		}
		if restored {
			dropSnapshot(path, log)
			restored = false
		}
		aside, err := setAside(path, c.id, c.db != nil, timeout, time.Now())
		if c.db != nil {
			_ = c.db.Close()
		}
		switch {
		case errors.Is(err, errReplaced):
			continue
		case err != nil:
			return nil, err
		}
		log.Warn("the views file is damaged: set it aside; the views will be rebuilt from the log",
			"file", path, "problem", c.damage, "kept_as", aside)
		pruneDamaged(path, log)
	}
	return nil, fmt.Errorf("projector: %s: still damaged after %d replacements", path, maxReplacements)
}

// replaceDamaged sets the live file aside after applying a batch found it
// damaged, and puts an empty file in its place, which Run then rebuilds
// from sequence 1. The lock of the damaged file is held until the new one
// is open; if another engine takes the new one first, this one gets
// ErrLocked and stops.
func (p *Projector) replaceDamaged(damage error) error {
	p.applyMu.Lock()
	defer p.applyMu.Unlock()
	if p.db == nil {
		return ErrClosed
	}
	id, err := os.Stat(p.cfg.Path)
	if err != nil {
		return fmt.Errorf("projector: setting the damaged views file aside: %w", err)
	}
	aside, err := setAside(p.cfg.Path, id, true, p.cfg.LockTimeout, time.Now())
	if err != nil {
		return fmt.Errorf("projector: setting the damaged views file aside: %w", err)
	}
	p.log.Warn("the views file is damaged: set it aside; the views will be rebuilt from the log",
		"file", p.cfg.Path, "problem", damage, "kept_as", aside)
	fresh, err := openDB(p.cfg.Path, p.cfg.LockTimeout, false)
	if err != nil {
		return err
	}
	if err := fresh.Update(initViews); err != nil {
		_ = fresh.Close()
		return fmt.Errorf("projector: preparing %s: %w", p.cfg.Path, err)
	}
	p.dbMu.Lock()
	damaged := p.db
	p.db = fresh
	p.dbMu.Unlock()
	_ = damaged.Close()
	p.setApplied(0)
	pruneDamaged(p.cfg.Path, p.log)
	dropSnapshot(p.cfg.Path, p.log)
	p.snapAt = 0
	return nil
}

// setAside renames the damaged file at path, whose identity is id, to
// path.corrupt-<unix time of now>, and returns the new name. locked says
// the caller holds the file's lock (it has it open in bbolt); otherwise
// setAside takes it, waiting up to timeout (ErrLocked after that), so that
// no engine is using the file while it moves. When path no longer names
// the file id, another engine set it aside first: errReplaced.
func setAside(path string, id fs.FileInfo, locked bool, timeout time.Duration, now time.Time) (string, error) {
	if !locked {
		f, err := os.OpenFile(path, os.O_RDWR, 0)
		if errors.Is(err, fs.ErrNotExist) {
			return "", errReplaced
		}
		if err != nil {
			return "", fmt.Errorf("projector: setting %s aside: %w", path, err)
		}
		defer f.Close() // releases the lock
		if err := lockFile(f, timeout); err != nil {
			return "", err
		}
	}
	info, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return "", errReplaced
	}
	if err != nil {
		return "", fmt.Errorf("projector: setting %s aside: %w", path, err)
	}
	if !os.SameFile(info, id) {
		return "", errReplaced
	}
	aside := damagedName(path, now)
	if err := os.Rename(path, aside); err != nil {
		return "", fmt.Errorf("projector: setting %s aside: %w", path, err)
	}
	if err := syncDir(filepath.Dir(path)); err != nil {
		return "", fmt.Errorf("projector: setting %s aside: %w", path, err)
	}
	return aside, nil
}

// lockFile takes the lock bbolt takes on its files (an exclusive flock),
// waiting up to timeout. Orbit runs on Unix systems only.
func lockFile(f *os.File, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		switch {
		case err == nil:
			return nil
		case !errors.Is(err, syscall.EWOULDBLOCK):
			return fmt.Errorf("projector: locking %s: %w", f.Name(), err)
		case time.Now().After(deadline):
			return fmt.Errorf("%w: %s (still held after %s)", ErrLocked, f.Name(), timeout)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// damagedName is the first free name path.corrupt-<unix time>, then
// path.corrupt-<unix time>-2, -3…
func damagedName(path string, now time.Time) string { return asideName(path, damagedSuffix, now) }

// asideName is the first free name path<suffix><unix time>, then
// path<suffix><unix time>-2, -3…
func asideName(path, suffix string, now time.Time) string {
	name := path + suffix + strconv.FormatInt(now.Unix(), 10)
	for n := 2; ; n++ {
		if _, err := os.Lstat(name); errors.Is(err, fs.ErrNotExist) {
			return name
		}
		name = fmt.Sprintf("%s%s%d-%d", path, suffix, now.Unix(), n)
	}
}

// damagedFile is a views file set aside, ordered by when.
type damagedFile struct {
	name    string
	unix, n int64
}

// pruneDamaged deletes all but the newest keepDamaged files set aside
// next to path.
func pruneDamaged(path string, log *slog.Logger) {
	names, _ := filepath.Glob(path + damagedSuffix + "*")
	var files []damagedFile
	for _, name := range names {
		if f, ok := parseDamagedName(path, name); ok {
			files = append(files, f)
		}
	}
	slices.SortFunc(files, func(a, b damagedFile) int {
		return cmp.Or(cmp.Compare(b.unix, a.unix), cmp.Compare(b.n, a.n)) // newest first
	})
	for _, f := range files[min(keepDamaged, len(files)):] {
		if err := os.Remove(f.name); err != nil {
			log.Warn("cannot remove an old damaged views file", "file", f.name, "err", err)
			continue
		}
		log.Info("removed an old damaged views file", "file", f.name)
	}
}

func parseDamagedName(path, name string) (damagedFile, bool) {
	rest, ok := strings.CutPrefix(name, path+damagedSuffix)
	if !ok {
		return damagedFile{}, false
	}
	unix, n, found := strings.Cut(rest, "-")
	f := damagedFile{name: name, n: 1}
	var err error
	if f.unix, err = strconv.ParseInt(unix, 10, 64); err != nil {
		return damagedFile{}, false
	}
	if found {
		if f.n, err = strconv.ParseInt(n, 10, 64); err != nil {
			return damagedFile{}, false
		}
	}
	return f, true
}
