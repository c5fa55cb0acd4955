package sandbox

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// sysProcAttr clones the program's first process into new mount and PID
// namespaces; a user other than root also into a user namespace in which it
// keeps its own ids and, through its exec of the step (ambient), every
// capability of that namespace (CAP_SYS_ADMIN to mount, CAP_SETPCAP to
// empty the bounding set, and those overlayfs asks of whoever mounts it
// over files it does not own), which the step drops before the program
// runs.
func sysProcAttr() *syscall.SysProcAttr {
	attr := &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWNS | syscall.CLONE_NEWPID}
	if uid := os.Getuid(); uid != 0 {
		gid := os.Getgid()
		attr.Cloneflags |= syscall.CLONE_NEWUSER
		attr.UidMappings = []syscall.SysProcIDMap{{ContainerID: uid, HostID: uid, Size: 1}}
		attr.GidMappings = []syscall.SysProcIDMap{{ContainerID: gid, HostID: gid, Size: 1}}
		attr.GidMappingsEnableSetgroups = false
		attr.AmbientCaps = allCaps()
	}
	return attr
}

// allCaps lists every capability the kernel knows.
func allCaps() []uintptr {
	last := uintptr(capSetFCap)
	if data, err := os.ReadFile("/proc/sys/kernel/cap_last_cap"); err == nil {
		if n, err := strconv.Atoi(strings.TrimSpace(string(data))); err == nil && n > 0 {
			last = uintptr(n)
		}
	}
	caps := make([]uintptr, 0, last+1)
	for c := uintptr(0); c <= last; c++ {
		caps = append(caps, c)
	}
	return caps
}

// available starts the step in probe mode: it makes the namespaces, mounts
// /proc and drops its capabilities as for a program, and exits 0. As root
// it also maps the ids of a mount for AgentUID (idmapped), and says why on
// a line of its own when it cannot: that is available's third result.
func available() (ok bool, reason, idmap string) {
	self, err := os.Executable()
	if err != nil {
		return false, fmt.Sprintf("no executable to re-execute: %v", err), ""
	}
	cmd := exec.Command(self, argFlag, argProbe)
	cmd.Args[0] = argv0
	cmd.SysProcAttr = sysProcAttr()
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.WaitDelay = time.Second
	if err := cmd.Start(); err != nil {
		return false, fmt.Sprintf("the kernel refused the namespaces: %v", err), ""
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err = <-done:
	case <-time.After(10 * time.Second):
		_ = cmd.Process.Kill()
		<-done
		return false, "the sandbox's probe did not end within 10s", ""
	}
	if err != nil {
		return false, fmt.Sprintf("the sandbox's probe failed (%v): %s", err, strings.TrimSpace(lastLine(out.String()))), ""
	}
	for _, line := range strings.Split(out.String(), "\n") {
		if why, ok := strings.CutPrefix(line, idmapLine); ok {
			return true, "", why
		}
	}
	return true, "", ""
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		s = s[i+1:]
	}
	if len(s) > 200 {
		s = s[:200]
	}
	return s
}
