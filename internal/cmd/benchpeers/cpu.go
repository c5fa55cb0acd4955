package main

import (
	"bytes"
	"os"
	"strconv"
	"strings"
	"time"
)

// clockTicks is Linux's USER_HZ, the unit of /proc/<pid>/stat's times.
const clockTicks = 100

// cpuTimes reads each process's CPU time so far: its own, user and
// system, and that of its children it has waited for (a side's forked
// echo, a server's exited backends).
func cpuTimes(pids []int) map[int]time.Duration {
	times := map[int]time.Duration{}
	for _, pid := range pids {
		data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil {
			continue
		}
		i := bytes.LastIndexByte(data, ')')
		if i < 0 {
			continue
		}
		// After "pid (comm)": state is field 3, utime 14 … cstime 17.
		f := strings.Fields(string(data[i+1:]))
		if len(f) < 15 {
			continue
		}
		var ticks int64
		for _, v := range f[11:15] {
			n, _ := strconv.ParseInt(v, 10, 64)
			ticks += n
		}
		times[pid] = time.Duration(ticks) * time.Second / clockTicks
	}
	return times
}

// cpuSince is the CPU time pids used since before was read: a process
// that was not there then counts whole.
func cpuSince(before map[int]time.Duration, pids []int) time.Duration {
	var used time.Duration
	for pid, t := range cpuTimes(pids) {
		used += t - before[pid]
	}
	return used
}
