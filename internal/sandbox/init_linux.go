package sandbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Linux constants syscall does not name (linux/prctl.h, capability.h).
const (
	prCapBSetDrop        = 24
	prSetNoNewPrivs      = 38
	prCapAmbient         = 47
	prCapAmbientClearAll = 4
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
	if os.Args[2] == argHold {
		hold()
	}
	if err := step(os.Args[2:]); err != nil {
		fmt.Fprintf(os.Stderr, "orbit sandbox: %v\n", err)
		os.Exit(126)
	}
	os.Exit(0)
}

// step is the re-executed process, first of its mount and PID namespaces.
func step(args []string) error {
	// Wrap clones the step into a new PID namespace, of which it is the
	// first process: anywhere else its mounts would be the caller's.
	if os.Getpid() != 1 {
		return errors.New("not the first process of a namespace of its own: nothing is mounted")
	}
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
		// The probe confines itself as a confined program's step does:
		// a kernel without mount_setattr or overlayfs in a user namespace
		// cannot give the policy Wrap promises.
		if _, err := confine(); err != nil {
			return err
		}
		if os.Getuid() == 0 {
			probeIdmap()
		}
		return dropCapabilities(0)
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
	path, argv := args[1], args[2:]
	var user *agentUser
	if p.RunAs != 0 {
		user = newAgentUser(p.RunAs)
		defer user.close()
		// The way to what the program reads, before anything covers it:
		// the binds made from under a mapped directory carry its mapping.
		if err := user.openWay(reached(p, wd, path), p); err != nil {
			return err
		}
	} else if os.Getuid() == 0 {
		// Root without capabilities still owns the kernel's settings
		// (a core_pattern piping to a program of its own runs that as
		// the host's root) and the SysRq trigger.
		if err := readOnly([]string{"/proc/sys", "/proc/sysrq-trigger"}); err != nil {
			return err
		}
	}
	home, err := apply(p, user, reached(p, wd, path))
	if err != nil {
		return err
	}
	if user != nil && home != "" {
		if err := os.Chown(home, user.id, user.id); err != nil {
			return fmt.Errorf("the program's home: %w", err)
		}
	}
	// The working directory is entered again through the mounts just
	// made: one under a hidden path is a work tree bound back, whose ..
	// is the cover, not what it covers.
	if err := os.Chdir(wd); err != nil {
		return fmt.Errorf("entering %s: %w", wd, err)
	}
	if err := dropCapabilities(p.RunAs); err != nil {
		return err
	}
	if err := forbidSetID(); err != nil {
		return err
	}
	env := environ(os.Environ(), home)
	if user != nil {
		env = trustRepositories(env)
	}
	if err := syscall.Exec(path, argv, env); err != nil {
		return fmt.Errorf("exec %s: %w", path, err)
	}
	return nil
}

// reached are the paths a program run by the step must reach: its work
// trees, kept files, working directory, the program, this executable
// (a CLI agent runs `orbit mcp` and Orbit's hooks) and the directories
// its PATH names.
func reached(p Policy, wd, program string) []string {
	paths := slices.Concat(p.Work, p.Keep, []string{wd, program})
	if self, err := os.Executable(); err == nil {
		paths = append(paths, self)
	}
	for _, dir := range filepath.SplitList(os.Getenv("PATH")) {
		if filepath.IsAbs(dir) {
			paths = append(paths, dir)
		}
	}
	return paths
}

// apply makes p.ReadOnly read-only, covers p.Hide, binds p.Keep back,
// read-only, and p.Work back, writable, each mapped for user when it is
// set. Confined, it first makes the whole file system read-only and /tmp
// private (opening the way there to each of reach for user), and returns
// the program's home.
func apply(p Policy, user *agentUser, reach []string) (home string, err error) {
	// The work trees and the kept files are opened before anything is
	// mounted over them: their bind source is the open directory or file
	// on its own file system (/proc/self/fd/N).
	work, err := openAll(p.Work, "keeping the work tree", syscall.O_DIRECTORY)
	if err != nil {
		return "", err
	}
	defer closeAll(work)
	kept, err := openAll(p.Keep, "keeping", 0)
	if err != nil {
		return "", err
	}
	defer closeAll(kept)
	if p.Confine {
		if home, err = confine(); err != nil {
			return "", err
		}
		if user != nil {
			if err := user.openTmpWay(reach); err != nil {
				return "", err
			}
		}
	} else if err := readOnly(p.ReadOnly); err != nil {
		return "", err
	}
	// Unconfined, the work trees come last, over the covers (a shipping
	// worktree in the hidden state directory), carrying along the covers
	// and read-only paths under them: their binds come from the same
	// file system. Confined, a work tree under /tmp comes from the host's
	// /tmp and a cover there is on the private one, so covers and work
	// trees are mounted by path, the shallower first: each lands on what
	// holds it, a work tree under a hidden directory on the cover, a
	// hidden directory in a work tree (a repository's .orbit/state) on
	// the work tree.
	type mount struct {
		path string
		work bool
	}
	var mounts []mount
	for _, h := range p.Hide {
		mounts = append(mounts, mount{path: h})
	}
	for _, w := range p.Work {
		mounts = append(mounts, mount{path: w, work: true})
	}
	if p.Confine {
		slices.SortStableFunc(mounts, func(a, b mount) int { return depth(a.path) - depth(b.path) })
	}
	var dirs []string
	for _, m := range mounts {
		if m.work {
			f, ok := work[m.path]
			if !ok {
				continue
			}
			if err := bindWritable(f, m.path, p.Confine, user); err != nil {
				return "", fmt.Errorf("keeping the work tree %s: %w", m.path, err)
			}
			continue
		}
		fi, err := os.Stat(m.path)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return "", fmt.Errorf("hiding %s: %w", m.path, err)
		}
		if fi.IsDir() {
			if err := syscall.Mount("tmpfs", m.path, "tmpfs", syscall.MS_NOSUID|syscall.MS_NODEV|syscall.MS_NOEXEC, "mode=0755,size=1m"); err != nil {
				return "", fmt.Errorf("hiding %s: %w", m.path, err)
			}
			dirs = append(dirs, m.path)
			continue
		}
		if err := syscall.Mount("/dev/null", m.path, "", syscall.MS_BIND, ""); err != nil {
			return "", fmt.Errorf("hiding %s: %w", m.path, err)
		}
	}
	for _, k := range p.Keep {
		if f, ok := kept[k]; ok {
			if err := bindReadOnly(f, k, user); err != nil {
				return "", fmt.Errorf("keeping %s: %w", k, err)
			}
		}
	}
	// Confined, the read-only paths go over the work trees: a work
	// tree's git directory.
	if p.Confine {
		if err := readOnly(p.ReadOnly); err != nil {
			return "", err
		}
	}
	for _, d := range dirs {
		if err := syscall.Mount("tmpfs", d, "tmpfs", syscall.MS_REMOUNT|syscall.MS_RDONLY|syscall.MS_NOSUID|syscall.MS_NODEV|syscall.MS_NOEXEC, ""); err != nil {
			return "", fmt.Errorf("making the cover of %s read-only: %w", d, err)
		}
	}
	return home, nil
}

// depth is how many directories deep path is.
func depth(path string) int {
	return strings.Count(filepath.Clean(path), "/")
}

// openAll opens each of paths as a place (O_PATH), skipping those that do
// not exist.
func openAll(paths []string, what string, flags int) (map[string]*os.File, error) {
	open := map[string]*os.File{}
	for _, path := range paths {
		f, err := os.OpenFile(path, oPath|syscall.O_CLOEXEC|flags, 0)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			closeAll(open)
			return nil, fmt.Errorf("%s %s: %w", what, path, err)
		}
		open[path] = f
	}
	return open, nil
}

func closeAll(files map[string]*os.File) {
	for _, f := range files {
		f.Close()
	}
}

// readOnly binds each of paths that exists on itself, read-only.
func readOnly(paths []string) error {
	for _, r := range paths {
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
	return nil
}

// bindWritable binds the directory f at dst, making dst first when a
// cover hides it; confined, the bind is made writable again (it copies
// the read-only flag of the mount it comes from). With user set, the bind
// maps f's owner to user.
func bindWritable(f *os.File, dst string, confined bool, user *agentUser) error {
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return err
	}
	if user != nil {
		return user.bind(f, dst, true)
	}
	if err := syscall.Mount(fmt.Sprintf("/proc/self/fd/%d", f.Fd()), dst, "", syscall.MS_BIND|syscall.MS_REC, ""); err != nil {
		return err
	}
	if !confined {
		return nil
	}
	return unix.MountSetattr(unix.AT_FDCWD, dst, 0, &unix.MountAttr{Attr_clr: unix.MOUNT_ATTR_RDONLY})
}

// confine makes every mount read-only, gives the program a /dev/shm of its
// own and a private /tmp: an overlay whose lower layer is the host's /tmp
// (read as the rest of the file system is) and whose upper layer is a
// tmpfs, so what the program writes there is its own and gone when its
// namespace ends. It returns the program's home, a fresh directory there.
func confine() (string, error) {
	tmp, err := os.OpenFile("/tmp", oPath|syscall.O_CLOEXEC|syscall.O_DIRECTORY, 0)
	if err != nil {
		return "", fmt.Errorf("the host's /tmp: %w", err)
	}
	defer tmp.Close()
	if err := unix.MountSetattr(unix.AT_FDCWD, "/", unix.AT_RECURSIVE, &unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY}); err != nil {
		return "", fmt.Errorf("making the file system read-only (mount_setattr, Linux 5.12): %w", err)
	}
	// The PID namespace's own /proc stays writable: a program that makes
	// namespaces of its own (Codex's bubblewrap) writes its uid_map.
	if err := unix.MountSetattr(unix.AT_FDCWD, "/proc", 0, &unix.MountAttr{Attr_clr: unix.MOUNT_ATTR_RDONLY}); err != nil {
		return "", fmt.Errorf("/proc: %w", err)
	}
	if fi, err := os.Stat("/dev/shm"); err == nil && fi.IsDir() {
		if err := syscall.Mount("tmpfs", "/dev/shm", "tmpfs", syscall.MS_NOSUID|syscall.MS_NODEV, "mode=1777"); err != nil {
			return "", fmt.Errorf("a private /dev/shm: %w", err)
		}
	}
	if err := syscall.Mount("tmpfs", "/tmp", "tmpfs", syscall.MS_NOSUID|syscall.MS_NODEV, "mode=0700"); err != nil {
		return "", fmt.Errorf("a private /tmp: %w", err)
	}
	for _, d := range []string{"/tmp/upper", "/tmp/work"} {
		if err := os.Mkdir(d, 0o700); err != nil {
			return "", fmt.Errorf("a private /tmp: %w", err)
		}
	}
	// The merged /tmp has its upper layer's mode: anyone's, sticky.
	if err := os.Chmod("/tmp/upper", 0o1777); err != nil {
		return "", fmt.Errorf("a private /tmp: %w", err)
	}
	layers, err := openAll([]string{"/tmp/upper", "/tmp/work"}, "a private /tmp:", syscall.O_DIRECTORY)
	if err != nil {
		return "", err
	}
	defer closeAll(layers)
	opts := fmt.Sprintf("lowerdir=/proc/self/fd/%d,upperdir=/proc/self/fd/%d,workdir=/proc/self/fd/%d",
		tmp.Fd(), layers["/tmp/upper"].Fd(), layers["/tmp/work"].Fd())
	if err := syscall.Mount("overlay", "/tmp", "overlay", syscall.MS_NOSUID|syscall.MS_NODEV, opts); err != nil {
		return "", fmt.Errorf("a private /tmp (overlayfs): %w", err)
	}
	home, err := os.MkdirTemp("/tmp", "home-")
	if err != nil {
		return "", fmt.Errorf("the program's home: %w", err)
	}
	return home, nil
}

// xdgDirs are the XDG base directories a confined program's environment
// drops: the engine's would be read-only, the defaults fall under HOME.
var xdgDirs = []string{"XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_RUNTIME_DIR"}

// environ is the program's environment: env, with HOME and TMPDIR in the
// private /tmp when home is set (confined) and no XDG base directory.
func environ(env []string, home string) []string {
	if home == "" {
		return env
	}
	out := make([]string, 0, len(env)+2)
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		if name == "HOME" || name == "TMPDIR" || slices.Contains(xdgDirs, name) {
			continue
		}
		out = append(out, kv)
	}
	return append(out, "HOME="+home, "TMPDIR=/tmp")
}

// bindReadOnly binds the file src at dst, read-only, making dst (and its
// directory, in a covering tmpfs, passable by anyone) first when it is
// not there. With user set, the bind maps src's owner to user.
func bindReadOnly(src *os.File, dst string, user *agentUser) error {
	if err := os.MkdirAll(filepath.Dir(dst), 0o711); err != nil {
		return err
	}
	if f, err := os.OpenFile(dst, os.O_CREATE|os.O_RDONLY, 0o600); err == nil {
		f.Close()
	} else {
		return err
	}
	if user != nil {
		return user.bind(src, dst, false)
	}
	if err := syscall.Mount(fmt.Sprintf("/proc/self/fd/%d", src.Fd()), dst, "", syscall.MS_BIND, ""); err != nil {
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
// Root that stays root keeps CAP_SETFCAP alone: Codex's own sandbox
// (bubblewrap) maps root into a user namespace of its own, which Linux
// 5.12 and later allow only with it. It gives a root agent no more than
// root's files already do (it may make a setuid-root file without it),
// and nothing over the mounts: a user namespace it makes gets them
// locked. Root becomes runAs when it is not 0, with no capability.
func dropCapabilities(runAs int) error {
	if err := prctl(prSetNoNewPrivs, 1, 0); err != nil {
		return fmt.Errorf("no_new_privs: %w", err)
	}
	var keep uint32
	if os.Getuid() == 0 && runAs == 0 {
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
	if runAs != 0 {
		if err := becomeUser(runAs); err != nil {
			return err
		}
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
