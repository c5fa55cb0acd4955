package proc

import (
	"errors"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// KillGroup sends SIGKILL to process group pgid and waits, up to within,
// until none of its processes runs any more. A killed process whose parent
// has not reaped it (a zombie: its parent may itself be stopped) runs no
// more and does not count. It reports whether the group was gone in time;
// a process in uninterruptible sleep dies only when that sleep ends.
func KillGroup(pgid int, within time.Duration) bool {
	if err := syscall.Kill(-pgid, syscall.SIGKILL); errors.Is(err, syscall.ESRCH) {
		return true
	}
	deadline := time.Now().Add(within)
	for groupRuns(pgid) {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(5 * time.Millisecond)
	}
	return true
}

// groupRuns reports whether a process of group pgid is alive and not a
// zombie, from /proc/<pid>/stat.
func groupRuns(pgid int) bool {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return syscall.Kill(-pgid, 0) == nil
	}
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		data, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue // gone meanwhile
		}
		// pid (comm) state ppid pgrp ...: comm may hold anything but the
		// fields after its last ')' are plain.
		fields := strings.Fields(string(data[strings.LastIndexByte(string(data), ')')+1:]))
		if len(fields) < 3 || fields[2] != strconv.Itoa(pgid) {
			continue
		}
		if state := fields[0]; state != "Z" && state != "X" {
			return true
		}
	}
	return false
}
