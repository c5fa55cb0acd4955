package proc

import (
	"bufio"
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// cgroups is where Start puts each program in a cgroup (v2) of its own,
// in which everything it starts stays wherever it goes in the process
// tree: finding what is left of a program is one read of its cgroup's
// process list, and killing it one write, where the sweep for its mark
// reads the environment of every process on the machine. "" when this
// process cannot create cgroups there (no cgroup v2 hierarchy, not
// delegated to this user, clone3 refused): programs are then found by
// their mark alone.
var cgroups = sync.OnceValue(openCgroups)

// cgroupSeq names the programs' cgroups within the process's.
var cgroupSeq atomic.Uint64

// cgroupPrefix starts the name of each process's cgroup directory,
// followed by its pid.
const cgroupPrefix = "orbit."

// openCgroups creates this process's directory for its programs' cgroups,
// orbit.<pid>, in its own cgroup of the v2 hierarchy, removes those that
// processes no longer running left there (each a program's cgroup whose
// processes are gone, then the process's own), and checks that a child
// can be started into a cgroup of it.
func openCgroups() string {
	mount, own := cgroup2Mount(), ownCgroup()
	if mount == "" || own == "" {
		return ""
	}
	parent := filepath.Join(mount, own)
	removeStale(parent)
	dir := filepath.Join(parent, cgroupPrefix+strconv.Itoa(os.Getpid()))
	if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return ""
	}
	if !canCloneInto(dir) {
		_ = os.Remove(dir)
		return ""
	}
	return dir
}

// cgroup2Mount is where the cgroup v2 hierarchy is mounted ("" if not).
func cgroup2Mount() string {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return ""
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		// id parent major:minor root mountpoint options... - fstype source options
		pre, post, ok := strings.Cut(s.Text(), " - ")
		fields := strings.Fields(pre)
		if ok && len(fields) >= 5 && strings.HasPrefix(post, "cgroup2 ") {
			return fields[4]
		}
	}
	return ""
}

// ownCgroup is this process's cgroup in the v2 hierarchy ("" if none).
func ownCgroup() string {
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return ""
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if path, ok := strings.CutPrefix(line, "0::"); ok {
			return path
		}
	}
	return ""
}

// removeStale removes what processes that no longer run left in parent:
// the empty cgroups of their programs and their own. A cgroup with
// processes still in it stays (an engine clears what an earlier one left
// by its programs' marks, see KillScope).
func removeStale(parent string) {
	entries, err := os.ReadDir(parent)
	if err != nil {
		return
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(strings.TrimPrefix(e.Name(), cgroupPrefix))
		if !e.IsDir() || !strings.HasPrefix(e.Name(), cgroupPrefix) || err != nil || alive(pid) {
			continue
		}
		dir := filepath.Join(parent, e.Name())
		children, _ := os.ReadDir(dir)
		for _, c := range children {
			if c.IsDir() {
				_ = os.Remove(filepath.Join(dir, c.Name()))
			}
		}
		_ = os.Remove(dir)
	}
}

func alive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// canCloneInto reports whether a child can be started into a cgroup under
// dir: it starts one into dir's probe cgroup to exec a program that does
// not exist, which fails in the child (ENOENT) only if the clone succeeded.
func canCloneInto(dir string) bool {
	probe := filepath.Join(dir, "probe")
	if err := os.Mkdir(probe, 0o755); err != nil {
		return false
	}
	defer os.Remove(probe)
	fd, err := syscall.Open(probe, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return false
	}
	defer syscall.Close(fd)
	_, err = syscall.ForkExec(filepath.Join(probe, "absent"), nil, &syscall.ProcAttr{
		Sys: &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: fd},
	})
	return errors.Is(err, syscall.ENOENT)
}

// cgroup is one program's cgroup.
type cgroup struct {
	dir string
	fd  int // open until the program is started into it

	mu     sync.Mutex // held by empty
	gone   bool       // given up (see release): not the program's any more
	killed bool       // by cgroup.kill, after which the kernel kills what enters it
}

// spares are the cgroups of programs that ended and left nothing in
// them, kept for the next programs: making a cgroup and removing it (a
// mkdir and an rmdir in the cgroup file system) cost a short program more
// than the rest of its start (issue 29), and an empty cgroup is as good as
// a new one (nothing reads a program's cgroup but its process list) —
// unless it was killed through cgroup.kill: some kernels go on killing
// every process that enters it, so it is removed. At most maxSpares are
// kept; those a process leaves when it ends are removed by the next to
// open the parent's directory (see removeStale).
var spares struct {
	sync.Mutex
	dirs []string
}

const maxSpares = 16

// newCgroup gives one program a cgroup, a spare or a new one, and sets
// attr to start the program in it; nil when this process has none to give
// (see cgroups).
func newCgroup(attr *syscall.SysProcAttr) *cgroup {
	dir := spareCgroup()
	if dir == "" {
		root := cgroups()
		if root == "" {
			return nil
		}
		dir = filepath.Join(root, strconv.FormatUint(cgroupSeq.Add(1), 10))
		if err := os.Mkdir(dir, 0o755); err != nil {
			return nil
		}
	}
	fd, err := syscall.Open(dir, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0)
	if err != nil {
		_ = os.Remove(dir)
		return nil
	}
	attr.UseCgroupFD, attr.CgroupFD = true, fd
	return &cgroup{dir: dir, fd: fd}
}

func spareCgroup() string {
	spares.Lock()
	defer spares.Unlock()
	n := len(spares.dirs)
	if n == 0 {
		return ""
	}
	dir := spares.dirs[n-1]
	spares.dirs = spares.dirs[:n-1]
	return dir
}

// started closes the descriptor the program was started with; the
// cgroup is given up if it was not.
func (c *cgroup) started(ok bool) {
	_ = syscall.Close(c.fd)
	if !ok {
		c.mu.Lock()
		defer c.mu.Unlock()
		c.release()
	}
}

// release gives the cgroup up, empty: kept as a spare, or removed when
// there are enough. It reports whether it did (a removal fails while a
// process is in the cgroup). Once given up the cgroup may be another
// program's, so nothing of this one's acts on it again. c.mu is held.
func (c *cgroup) release() bool {
	spares.Lock()
	kept := !c.killed && len(spares.dirs) < maxSpares
	if kept {
		spares.dirs = append(spares.dirs, c.dir)
	}
	spares.Unlock()
	if !kept && os.Remove(c.dir) != nil {
		return false
	}
	c.gone = true
	return true
}

// cgroupPatience bounds how long empty waits for killed processes to be
// gone: one in uninterruptible sleep dies only when that sleep ends, and
// its cgroup is then left behind (removed by the next process to open
// the parent's, see removeStale).
const cgroupPatience = 5 * time.Second

// empty kills every process in the cgroup that carries the program's mark
// (match) and, once none is left, gives the cgroup up (see release). A
// process that cleared the mark left the program on purpose (see TagVar)
// and is spared; the cgroup then stays until it is empty (see
// removeStale). It is a no-op once the cgroup was given up.
func (c *cgroup) empty(match func(value []byte) bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	deadline := time.Now().Add(cgroupPatience)
	for killed := false; !c.gone; killed = true {
		procs, err := os.ReadFile(filepath.Join(c.dir, "cgroup.procs"))
		if err != nil {
			return
		}
		if len(bytes.TrimSpace(procs)) == 0 && c.release() {
			return
		}
		if time.Now().After(deadline) {
			return
		}
		if killed {
			time.Sleep(time.Millisecond)
		}
		if !c.kill(procs, match) {
			return
		}
	}
}

// kill sends SIGKILL to every process listed in procs but those that
// cleared the mark: through cgroup.kill where the kernel has it (5.14)
// and none did, which also takes those forked meanwhile. A process whose
// environment cannot be read (a zombie) is killed, which costs nothing.
// It reports whether there was any to kill.
func (c *cgroup) kill(procs []byte, match func(value []byte) bool) bool {
	var marked []int
	others := false
	for field := range bytes.FieldsSeq(procs) {
		pid, err := strconv.Atoi(string(field))
		if err != nil {
			continue
		}
		if value, found, read := markOf(pid); read && (!found || !match(value)) {
			others = true
			continue
		}
		marked = append(marked, pid)
	}
	if len(marked) == 0 {
		return false
	}
	if !others && os.WriteFile(filepath.Join(c.dir, "cgroup.kill"), []byte("1"), 0) == nil {
		c.killed = true
		return true
	}
	for _, pid := range marked {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	return true
}
