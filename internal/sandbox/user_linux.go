package sandbox

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// idmapLine starts the probe's line saying why it could not map the ids
// of a mount (available's third result).
const idmapLine = "no idmapped mounts: "

// argHold, instead of a policy, makes the re-executed step hold a user
// namespace until its stdin closes: agentUser.userns opens the namespace
// through it, which only a live process offers.
const argHold = "hold"

// hold is the step in hold mode.
func hold() {
	_, _ = io.Copy(io.Discard, os.Stdin)
	os.Exit(0)
}

// agentUser is what the step knows of the user a program runs as
// (Policy.RunAs) while it makes the program's mounts.
type agentUser struct {
	id int
	// userns are user namespaces, by owner (uid, gid), that map the
	// owner's ids to id: an idmapped mount takes one.
	userns map[[2]int]*os.File
	// mapped are the directories bound on themselves with their ids
	// mapped: a bind from under one is mapped with it.
	mapped []string
}

func newAgentUser(id int) *agentUser {
	return &agentUser{id: id, userns: map[[2]int]*os.File{}}
}

func (a *agentUser) close() {
	for _, f := range a.userns {
		f.Close()
	}
}

// usernsFor is a user namespace in which uid and gid are a.id outside:
// through a mount idmapped with it, what uid owns is a.id's, and what a.id
// makes there is uid's on disk.
func (a *agentUser) usernsFor(uid, gid int) (*os.File, error) {
	key := [2]int{uid, gid}
	if f, ok := a.userns[key]; ok {
		return f, nil
	}
	cmd := exec.Command("/proc/self/exe", argFlag, argHold)
	cmd.Args[0] = argv0
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags:  syscall.CLONE_NEWUSER,
		UidMappings: []syscall.SysProcIDMap{{ContainerID: uid, HostID: a.id, Size: 1}},
		GidMappings: []syscall.SysProcIDMap{{ContainerID: gid, HostID: a.id, Size: 1}},
		Pdeathsig:   syscall.SIGKILL,
	}
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("a user namespace mapping uid %d to %d: %w", uid, a.id, err)
	}
	f, err := os.Open(fmt.Sprintf("/proc/%d/ns/user", cmd.Process.Pid))
	in.Close()
	if werr := cmd.Wait(); err == nil && werr != nil {
		f.Close()
		err = werr
	}
	if err != nil {
		return nil, fmt.Errorf("a user namespace mapping uid %d to %d: %w", uid, a.id, err)
	}
	a.userns[key] = f
	return f, nil
}

// isMapped reports whether path is at or under a directory already mapped.
func (a *agentUser) isMapped(path string) bool {
	return slices.ContainsFunc(a.mapped, func(m string) bool { return within(m, path) })
}

// bind mounts a copy of the mounts at src (an O_PATH file: a directory
// with what is mounted under it, or a file) back at path, where src was
// opened, its ids mapped for a.id unless path is under a mapped
// directory, whose mapping it carries already; writable clears the
// read-only flag of the copy's top mount, else it is set.
func (a *agentUser) bind(src *os.File, path string, writable bool) error {
	tree, err := unix.OpenTree(int(src.Fd()), "", unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_EMPTY_PATH|unix.AT_RECURSIVE)
	if err != nil {
		return fmt.Errorf("open_tree: %w", err)
	}
	defer unix.Close(tree)
	if !a.isMapped(path) {
		if err := a.mapIDs(tree, src); err != nil {
			return err
		}
	}
	flags := &unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY}
	if writable {
		flags = &unix.MountAttr{Attr_clr: unix.MOUNT_ATTR_RDONLY}
	}
	if err := unix.MountSetattr(tree, "", unix.AT_EMPTY_PATH, flags); err != nil {
		return fmt.Errorf("mount_setattr: %w", err)
	}
	if err := unix.MoveMount(tree, "", unix.AT_FDCWD, path, unix.MOVE_MOUNT_F_EMPTY_PATH); err != nil {
		return fmt.Errorf("move_mount: %w", err)
	}
	return nil
}

// mapIDs idmaps the detached mounts of tree, the copy of src's: src's
// owner becomes a.id.
func (a *agentUser) mapIDs(tree int, src *os.File) error {
	var st unix.Stat_t
	if err := unix.Fstat(int(src.Fd()), &st); err != nil {
		return err
	}
	ns, err := a.usernsFor(int(st.Uid), int(st.Gid))
	if err != nil {
		return err
	}
	attr := &unix.MountAttr{Attr_set: unix.MOUNT_ATTR_IDMAP, Userns_fd: uint64(ns.Fd())}
	if err := unix.MountSetattr(tree, "", unix.AT_EMPTY_PATH|unix.AT_RECURSIVE, attr); err != nil {
		return fmt.Errorf("mapping the ids of %s's mount to uid %d (idmapped mounts): %w", src.Name(), a.id, err)
	}
	return nil
}

// openWay lets a.id reach each of paths outside the private /tmp: the
// shallowest directory on the way to one that a.id may not pass (a home
// of mode 0700) is bound on itself, read-only, its owner's ids mapped to
// a.id. Under it a.id reads what its owner may (as root did before it);
// the mounts that hide and keep paths go over it later. The way stops at
// a work tree, which is mapped whole, and at a hidden directory, whose
// cover a.id passes (a mapped mount inside either would keep the work
// tree's own mapping from being made). In the private /tmp (confined)
// openTmpWay does the work, after the mounts.
func (a *agentUser) openWay(paths []string, p Policy) error {
	for _, path := range paths {
		for _, dir := range way(path) {
			if (p.Confine && within("/tmp", dir)) || a.isMapped(dir) || p.holds(dir) {
				break
			}
			fi, err := os.Stat(dir)
			if err != nil || !fi.IsDir() {
				break
			}
			if passable(fi, a.id) {
				continue
			}
			f, err := os.OpenFile(dir, oPath|syscall.O_CLOEXEC|syscall.O_DIRECTORY, 0)
			if err != nil {
				return fmt.Errorf("opening the way to %s: %w", path, err)
			}
			err = a.bind(f, dir, false)
			f.Close()
			if err != nil {
				return fmt.Errorf("opening the way to %s through %s: %w", path, dir, err)
			}
			a.mapped = append(a.mapped, dir)
			break
		}
	}
	return nil
}

// openTmpWay lets a.id pass each directory of the private /tmp on the way
// to paths: one it may not pass gets search permission for anyone, which
// changes the program's copy (the overlay's upper layer) and not the
// host's. A directory on another file system (a work tree bound there) is
// left as it is.
func (a *agentUser) openTmpWay(paths []string) error {
	var tmp unix.Stat_t
	if err := unix.Stat("/tmp", &tmp); err != nil {
		return err
	}
	for _, path := range paths {
		if !within("/tmp", path) {
			continue
		}
		for _, dir := range way(path) {
			fi, err := os.Stat(dir)
			if err != nil || !fi.IsDir() {
				break
			}
			st, ok := fi.Sys().(*syscall.Stat_t)
			if !ok || st.Dev != tmp.Dev || passable(fi, a.id) {
				continue
			}
			if err := os.Chmod(dir, fi.Mode().Perm()|0o001); err != nil {
				return fmt.Errorf("opening the way to %s through %s: %w", path, dir, err)
			}
		}
	}
	return nil
}

// holds reports whether dir is at or under a work tree or a hidden path
// of p.
func (p Policy) holds(dir string) bool {
	return slices.ContainsFunc(slices.Concat(p.Work, p.Hide), func(h string) bool { return within(h, dir) })
}

// way lists the directories from / down to path, path included.
func way(path string) []string {
	path = filepath.Clean(path)
	dirs := []string{"/"}
	for i := 1; i < len(path); i++ {
		if path[i] == '/' {
			dirs = append(dirs, path[:i])
		}
	}
	if path != "/" {
		dirs = append(dirs, path)
	}
	return dirs
}

// passable reports whether uid (with gid uid and no other group) may
// search the directory fi.
func passable(fi os.FileInfo, uid int) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return false
	}
	mode := fi.Mode().Perm()
	switch {
	case int(st.Uid) == uid:
		return mode&0o100 != 0
	case int(st.Gid) == uid:
		return mode&0o010 != 0
	}
	return mode&0o001 != 0
}

// becomeUser makes this thread uid and gid id with no supplementary
// group: with root's uid gone its capabilities go too (no
// SECBIT_KEEP_CAPS), and what it execs runs as id. Only this thread: it
// is the one that execs (Init locks it), and exec leaves no other.
func becomeUser(id int) error {
	if _, _, e := syscall.RawSyscall(syscall.SYS_SETGROUPS, 0, 0, 0); e != 0 {
		return fmt.Errorf("setgroups: %w", e)
	}
	if _, _, e := syscall.RawSyscall(syscall.SYS_SETRESGID, uintptr(id), uintptr(id), uintptr(id)); e != 0 {
		return fmt.Errorf("setresgid %d: %w", id, e)
	}
	if _, _, e := syscall.RawSyscall(syscall.SYS_SETRESUID, uintptr(id), uintptr(id), uintptr(id)); e != 0 {
		return fmt.Errorf("setresuid %d: %w", id, e)
	}
	return nil
}

// probeIdmap, as root in the probe, maps the ids of a copy of /'s mount
// for AgentUID and says on a line of its own (idmapLine) why it could not.
func probeIdmap() {
	a := newAgentUser(AgentUID)
	defer a.close()
	root, err := os.OpenFile("/", oPath|syscall.O_CLOEXEC|syscall.O_DIRECTORY, 0)
	if err == nil {
		defer root.Close()
		var tree int
		if tree, err = unix.OpenTree(int(root.Fd()), "", unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_EMPTY_PATH); err == nil {
			err = a.mapIDs(tree, root)
			unix.Close(tree)
		}
	}
	if err != nil {
		fmt.Println(idmapLine + err.Error())
	}
}

// trustRepositories adds safe.directory=* to the git configuration env
// gives on the command line (GIT_CONFIG_COUNT): a repository's git
// directory is read-only to the program and stays its owner's (root's),
// which git would otherwise take for a stranger's and refuse
// ("dubious ownership"). It is the engine's repository, which the
// program was given to work in.
func trustRepositories(env []string) []string {
	n := 0
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "GIT_CONFIG_COUNT="); ok {
			n, _ = strconv.Atoi(v)
		}
	}
	out := slices.DeleteFunc(slices.Clone(env), func(kv string) bool { return strings.HasPrefix(kv, "GIT_CONFIG_COUNT=") })
	return append(out, fmt.Sprintf("GIT_CONFIG_KEY_%d=safe.directory", n), fmt.Sprintf("GIT_CONFIG_VALUE_%d=*", n),
		fmt.Sprintf("GIT_CONFIG_COUNT=%d", n+1))
}
