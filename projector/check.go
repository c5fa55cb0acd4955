package projector

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime/debug"
	"syscall"
	"time"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"
)

// errDamaged marks errors about a views file that cannot be read: it is
// truncated, bit-flipped or otherwise not what this package wrote. The
// views are derived data, so a damaged file is set aside and the views are
// rebuilt from the log.
var errDamaged = errors.New("damaged views file")

// maxCheckErrors bounds the problems of bbolt's consistency check that a
// damage report quotes.
const maxCheckErrors = 3

// checked is a views file opened (or not) and checked by openChecked.
type checked struct {
	// db is the file, open and locked; nil when bbolt cannot open it.
	db *bolt.DB
	// id identifies the file opened, for setAside.
	id fs.FileInfo
	// damage is what is wrong with the file, wrapping errDamaged; nil
	// when it is sound.
	damage error
}

// openChecked opens the live views file, taking its lock, and reads all of
// it (see checkFile). The error is for failures that say nothing about the
// file's contents: ErrLocked, and errors of the operating system.
func openChecked(path string, timeout time.Duration) (checked, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
		return checked{}, fmt.Errorf("projector: creating the views directory: %w", err)
	}
	// Another engine may set the file aside, and put a fresh one in its
	// place, while this one waits for the lock: a lock on a file that is no
	// longer at path locks nothing, so open again.
	for range 3 {
		c, file, err := openOnce(path, timeout)
		if c.db == nil || err != nil {
			return c, err
		}
		if same, err := isAt(file, path); err != nil || !same {
			_ = c.db.Close()
			if err != nil {
				return checked{}, fmt.Errorf("projector: opening %s: %w", path, err)
			}
			continue
		}
		if err := checkFile(c.db, file); err != nil {
			if !errors.Is(err, errDamaged) {
				_ = c.db.Close()
				return checked{}, err
			}
			c.damage = err
		}
		return c, nil
	}
	return checked{}, fmt.Errorf("projector: opening %s: the file kept being replaced while it was opened", path)
}

// openOnce is bolt.Open, made safe for damaged files. bbolt reads the
// freelist while it opens, and a damaged file can make it panic or read
// past the file's end (a fault, not an error); both become damage, and the
// file bbolt opened is closed and unlocked. It also returns the file bbolt
// opened.
func openOnce(path string, timeout time.Duration) (c checked, file *os.File, err error) {
	opts := &bolt.Options{
		Timeout: timeout,
		OpenFile: func(name string, flag int, perm os.FileMode) (*os.File, error) {
			f, err := os.OpenFile(name, flag, perm)
			if err != nil {
				return nil, err
			}
			file = f
			c.id, err = f.Stat()
			if err != nil {
				_ = f.Close()
				return nil, err
			}
			return f, nil
		},
	}
	err = guard(func() (err error) {
		c.db, err = bolt.Open(path, 0o600, opts)
		return err
	})
	switch {
	case err == nil:
		return c, file, nil
	case errors.Is(err, berrors.ErrTimeout):
		return checked{}, nil, fmt.Errorf("%w: %s (still held after %s)", ErrLocked, path, timeout)
	case isSystemError(err):
		return checked{}, nil, fmt.Errorf("projector: opening %s: %w", path, err)
	}
	if errors.Is(err, errDamaged) && file != nil {
		// bbolt panicked before it could close the file. Its memory map
		// stays (bbolt keeps the address to itself) and, with it, the
		// open file and its lock: unlock explicitly.
		_ = syscall.Flock(int(file.Fd()), syscall.LOCK_UN)
		_ = file.Close()
	} else {
		err = fmt.Errorf("%w: bbolt cannot open it: %w", errDamaged, err)
	}
	return checked{id: c.id, damage: err}, nil, nil
}

// isSystemError reports whether an error of bolt.Open comes from the
// operating system (permissions, descriptors, memory) rather than from what
// the file holds: bbolt reports a file it cannot make sense of with its own
// errors (invalid, checksum, version mismatch, too small).
func isSystemError(err error) bool {
	var (
		pathErr *fs.PathError
		errno   syscall.Errno
	)
	return errors.As(err, &pathErr) || errors.As(err, &errno)
}

// checkFile reads the whole of an open views file (file is the file bbolt
// opened) and returns what is wrong with it, as an error wrapping
// errDamaged, or nil. Other errors (the file cannot be read at all) are
// returned as they are. In order:
//
//   - the file must hold every page its meta page counts (a truncated file
//     does not, and reading the missing pages would fault);
//   - every page header must make sense, and the pages must make a tree
//     whose keys and values lie within their pages (see checkPageHeaders
//     and checkTree): past this, bbolt's own reads stay inside the file;
//   - the keys of every bucket must be in strictly increasing order; this
//     reads every page of the tree and every key;
//   - the applied cursor must parse, and every record of every view must
//     decode, be stored exactly as the view encodes it, and agree with its
//     key. Views of a format this code does not write are not decoded: the
//     anchor check empties and rebuilds them;
//   - bbolt's consistency check (tx.Check): page references, the freelist.
//
// tx.Check goes last: it runs in a goroutine of its own, where a fault
// would not be recovered.
//
// IMPORTANT: bbolt keeps no checksum of data pages, so a flipped bit that
// leaves a record valid and canonical JSON (a letter of a string changed
// into another) is not found here or anywhere but by Replay's comparison
// with a rebuild.
func checkFile(db *bolt.DB, file *os.File) error {
	return guard(func() error {
		return db.View(func(tx *bolt.Tx) error {
			info, err := file.Stat()
			if err != nil {
				return fmt.Errorf("projector: reading the size of %s: %w", db.Path(), err)
			}
			if size := info.Size(); size < tx.Size() {
				return fmt.Errorf("%w: it is %d bytes long but its meta page counts %d", errDamaged, size, tx.Size())
			}
			heads, err := checkPageHeaders(tx)
			if err != nil {
				return damaged(err)
			}
			if err := checkTree(tx, file, heads); err != nil {
				return damaged(err)
			}
			if err := walkKeys(tx.Cursor(), "the root bucket"); err != nil {
				return damaged(err)
			}
			if err := checkRecords(tx); err != nil {
				return damaged(err)
			}
			return checkPages(tx)
		})
	})
}

// walkKeys reads every key of c's bucket, checking that they increase
// strictly, then does the same in every nested bucket.
func walkKeys(c *bolt.Cursor, name string) error {
	var prev []byte
	for k, v := c.First(); k != nil; k, v = c.Next() {
		if prev != nil && bytes.Compare(prev, k) >= 0 {
			return fmt.Errorf("%s: key %q comes after %q", name, k, prev)
		}
		prev = k
		if v != nil {
			continue
		}
		child := c.Bucket().Bucket(k)
		if child == nil {
			continue // not a bucket: an empty value
		}
		if err := walkKeys(child.Cursor(), fmt.Sprintf("bucket %q", k)); err != nil {
			return err
		}
	}
	return nil
}

// damaged wraps err in errDamaged unless it already is.
func damaged(err error) error {
	if errors.Is(err, errDamaged) {
		return err
	}
	return fmt.Errorf("%w: %w", errDamaged, err)
}

// checkPages runs bbolt's consistency check and reports its first few
// problems. Its cost is a walk of every page reference, with no decoding.
func checkPages(tx *bolt.Tx) error {
	var problems []error
	n := 0
	for err := range tx.Check() { // drain it: the check blocks on an unread channel
		if n++; n <= maxCheckErrors {
			problems = append(problems, err)
		}
	}
	if n == 0 {
		return nil
	}
	if n > maxCheckErrors {
		problems = append(problems, fmt.Errorf("and %d more", n-maxCheckErrors))
	}
	return fmt.Errorf("%w: bbolt's consistency check: %w", errDamaged, errors.Join(problems...))
}

// guard runs fn, turning a panic, or a fault reading the memory-mapped
// file, into an error wrapping errDamaged. bbolt panics on some pages it
// cannot make sense of, and reading a page a damaged file does not hold
// faults.
//
// A panic of this package's own code becomes damage too; the rebuild that
// follows then meets it again, and Run stops with it (see Run).
func guard(fn func() error) (err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: reading it panicked: %v", errDamaged, r)
		}
	}()
	return fn()
}

// isAt reports whether f is the file at path now.
func isAt(f *os.File, path string) (bool, error) {
	open, err := f.Stat()
	if err != nil {
		return false, err
	}
	now, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return os.SameFile(open, now), nil
}
