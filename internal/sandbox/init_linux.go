package sandbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"syscall"
	"unsafe"
)

// Linux constants syscall does not name (linux/prctl.h, capability.h).
const (
	prCapBSetDrop        = 24
	prSetNoNewPrivs      = 38
	prCapAmbient         = 47
	prCapAmbientClearAll = 4
	capSetPCap           = 8
	capSysAdmin          = 21
	capSetFCap           = 31
	capabilityVersion3   = 0x20080522
	// oPath is O_PATH, which syscall does not name: an open file that
	// is only a place, enough for a bind's source.
	oPath = 0x200000
	// msRelatime and friends: the statfs flags a read-only remount of a
	// bind must keep (a user namespace may not clear them).
	stRelatime = 0x1000
	msRelatime = 1 << 21
)

// Init turns this process into the sandbox's step when Wrap or Available
// started it as one: it makes the policy's mounts, drops every capability
// and execs the program, and never returns; a step that cannot do all of
// that exits 126 saying why, so the program never runs half-hidden. In any
// other process it returns at once.
//
// IMPORTANT: call it first thing in main, and in TestMain of a test binary
// that starts sandboxed programs, before anything reads the arguments.
func Init() {
	if len(os.Args) < 3 || os.Args[0] != argv0 || os.Args[1] != argFlag {
		return
	}
	// Capabilities, the bounding set and no_new_privs belong to a thread:
	// the one that drops them must be the one that execs.
	runtime.LockOSThread()
	if err := step(os.Args[2:]); err != nil {
		fmt.Fprintf(os.Stderr, "orbit sandbox: %v\n", err)
		os.Exit(126)
	}
	os.Exit(0)
}

// step is the re-executed process, first of its mount and PID namespaces.
func step(args []string) error {
	// Nothing mounted here may reach the engine's namespace.
	if err := syscall.Mount("", "/", "", syscall.MS_REC|syscall.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("making the mounts private: %w", err)
	}
	// A /proc of this PID namespace only: through the engine's /proc a
	// program could walk into any process's root (/proc/<pid>/root), and
	// so into the engine's mount namespace.
	if err := syscall.Mount("proc", "/proc", "proc", syscall.MS_NOSUID|syscall.MS_NODEV|syscall.MS_NOEXEC, ""); err != nil {
		return fmt.Errorf("mounting /proc: %w", err)
	}
	if args[0] == argProbe {
		return dropCapabilities()
	}
	if len(args) < 3 {
		return errors.New("no program to run")
	}
	var p Policy
	if err := json.Unmarshal([]byte(args[0]), &p); err != nil {
		return fmt.Errorf("the policy: %w", err)
	}
	wd, err := os.Getwd()
	if err != nil {
		return fmt.Errorf("the working directory: %w", err)
	}
	if err := apply(p); err != nil {
		return err
	}
	// The working directory is entered again through the mounts just
	// made: one under a hidden path is a work tree bound back, whose ..
	// is the cover, not what it covers.
	if err := os.Chdir(wd); err != nil {
		return fmt.Errorf("entering %s: %w", wd, err)
	}
	if err := dropCapabilities(); err != nil {
		return err
	}
	path, argv := args[1], args[2:]
	if err := syscall.Exec(path, argv, os.Environ()); err != nil {
		return fmt.Errorf("exec %s: %w", path, err)
	}
	return nil
}

// apply makes p.ReadOnly read-only, covers p.Hide and binds p.Keep back,
// read-only.
func apply(p Policy) error {
	// The work trees are opened before anything is mounted over them:
	// their bind source is the open directory on its own file system.
	work := map[string]*os.File{}
	for _, w := range p.Work {
		f, err := os.OpenFile(w, oPath|syscall.O_CLOEXEC|syscall.O_DIRECTORY, 0)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return fmt.Errorf("keeping the work tree %s: %w", w, err)
		}
		defer f.Close()
		work[w] = f
	}
	for _, r := range p.ReadOnly {
		if _, err := os.Stat(r); errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err := syscall.Mount(r, r, "", syscall.MS_BIND|syscall.MS_REC, ""); err != nil {
			return fmt.Errorf("making %s read-only: %w", r, err)
		}
		if err := remountReadOnly(r); err != nil {
			return fmt.Errorf("making %s read-only: %w", r, err)
		}
	}
	// The kept files are opened before they are covered: their bind
	// source is the open file (/proc/self/fd/N).
	kept := map[string]*os.File{}
	for _, k := range p.Keep {
		f, err := os.OpenFile(k, oPath|syscall.O_CLOEXEC, 0)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return fmt.Errorf("keeping %s: %w", k, err)
		}
		defer f.Close()
		kept[k] = f
	}
	var dirs []string
	for _, h := range p.Hide {
		fi, err := os.Stat(h)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return fmt.Errorf("hiding %s: %w", h, err)
		}
		if fi.IsDir() {
			if err := syscall.Mount("tmpfs", h, "tmpfs", syscall.MS_NOSUID|syscall.MS_NODEV|syscall.MS_NOEXEC, "mode=0755,size=1m"); err != nil {
				return fmt.Errorf("hiding %s: %w", h, err)
			}
			dirs = append(dirs, h)
			continue
		}
		if err := syscall.Mount("/dev/null", h, "", syscall.MS_BIND, ""); err != nil {
			return fmt.Errorf("hiding %s: %w", h, err)
		}
	}
	for _, k := range p.Keep {
		f, ok := kept[k]
		if !ok {
			continue
		}
		if err := bindReadOnly(fmt.Sprintf("/proc/self/fd/%d", f.Fd()), k); err != nil {
			return fmt.Errorf("keeping %s: %w", k, err)
		}
	}
	for _, w := range p.Work {
		f, ok := work[w]
		if !ok {
			continue
		}
		if err := os.MkdirAll(w, 0o755); err != nil {
			return fmt.Errorf("keeping the work tree %s: %w", w, err)
		}
		if err := syscall.Mount(fmt.Sprintf("/proc/self/fd/%d", f.Fd()), w, "", syscall.MS_BIND|syscall.MS_REC, ""); err != nil {
			return fmt.Errorf("keeping the work tree %s: %w", w, err)
		}
	}
	for _, d := range dirs {
		if err := syscall.Mount("tmpfs", d, "tmpfs", syscall.MS_REMOUNT|syscall.MS_RDONLY|syscall.MS_NOSUID|syscall.MS_NODEV|syscall.MS_NOEXEC, ""); err != nil {
			return fmt.Errorf("making the cover of %s read-only: %w", d, err)
		}
	}
	return nil
}

// bindReadOnly binds the file src at dst, read-only, making dst (and its
// directory, in a covering tmpfs) first when it is not there.
func bindReadOnly(src, dst string) error {
	if err := os.MkdirAll(filepath.Dir(dst), 0o700); err != nil {
		return err
	}
	if f, err := os.OpenFile(dst, os.O_CREATE|os.O_RDONLY, 0o600); err == nil {
		f.Close()
	} else {
		return err
	}
	if err := syscall.Mount(src, dst, "", syscall.MS_BIND, ""); err != nil {
		return err
	}
	return remountReadOnly(dst)
}

// remountReadOnly makes the bind mount at dst read-only.
func remountReadOnly(dst string) error {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dst, &st); err != nil {
		return err
	}
	// A remount must keep the flags of the mount the file is on, which a
	// user namespace may not clear.
	flags := uintptr(syscall.MS_REMOUNT | syscall.MS_BIND | syscall.MS_RDONLY)
	flags |= uintptr(st.Flags) & (syscall.MS_NOSUID | syscall.MS_NODEV | syscall.MS_NOEXEC | syscall.MS_NOATIME | syscall.MS_NODIRATIME)
	if st.Flags&stRelatime != 0 {
		flags |= msRelatime
	}
	return syscall.Mount("", dst, "", flags, "")
}

// dropCapabilities leaves this thread, and what it execs, no capability
// and no way to gain one: no_new_privs (no setuid or file capabilities on
// exec), an empty bounding set (what root gains on exec), no ambient,
// permitted, effective or inheritable ones.
//
// Root keeps CAP_SETFCAP alone: Codex's own sandbox (bubblewrap) maps
// root into a user namespace of its own, which Linux 5.12 and later allow
// only with it. It gives a root agent no more than root's files already
// do (it may make a setuid-root file without it), and nothing over the
// mounts: a user namespace it makes gets them locked.
func dropCapabilities() error {
	if err := prctl(prSetNoNewPrivs, 1, 0); err != nil {
		return fmt.Errorf("no_new_privs: %w", err)
	}
	var keep uint32
	if os.Getuid() == 0 {
		keep = 1 << capSetFCap
	}
	for c := uintptr(0); ; c++ {
		if c < 32 && keep&(1<<c) != 0 {
			continue
		}
		err := prctl(prCapBSetDrop, c, 0)
		if errors.Is(err, syscall.EINVAL) {
			break // past the last capability
		}
		if err != nil {
			return fmt.Errorf("dropping capability %d from the bounding set: %w", c, err)
		}
	}
	if err := prctl(prCapAmbient, prCapAmbientClearAll, 0); err != nil && !errors.Is(err, syscall.EINVAL) {
		return fmt.Errorf("clearing the ambient capabilities: %w", err)
	}
	hdr := struct {
		version uint32
		pid     int32
	}{version: capabilityVersion3}
	var data [2]struct{ effective, permitted, inheritable uint32 }
	data[0].effective, data[0].permitted = keep, keep
	if _, _, e := syscall.RawSyscall(syscall.SYS_CAPSET, uintptr(unsafe.Pointer(&hdr)), uintptr(unsafe.Pointer(&data[0])), 0); e != 0 {
		return fmt.Errorf("capset: %w", e)
	}
	return nil
}

func prctl(option, arg2, arg3 uintptr) error {
	if _, _, e := syscall.RawSyscall(syscall.SYS_PRCTL, option, arg2, arg3); e != 0 {
		return e
	}
	return nil
}
