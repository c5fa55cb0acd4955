package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// syncCalls are the fsync-family calls counted, as scripts/fsyncs.sh
// counts them.
var syncCalls = []string{"fsync", "fdatasync"}

// syncCount is what strace counted over one workload.
type syncCount struct {
	calls   map[string]int
	seconds float64       // wall time inside those calls, summed over threads
	wall    time.Duration // the workload's, under strace
	steps   int
}

func (c syncCount) total() int {
	n := 0
	for _, name := range syncCalls {
		n += c.calls[name]
	}
	return n
}

// traceSyncs attaches strace to pids (and their threads and children
// to come), runs work, and returns the fsync-family calls made meanwhile
// and the wall time spent in them.
func traceSyncs(ctx context.Context, dir string, pids []int, work func() error) (map[string]int, float64, error) {
	if len(pids) == 0 {
		return nil, 0, errors.New("no process to trace")
	}
	out := filepath.Join(dir, "strace-"+strconv.Itoa(pids[0])+".txt")
	args := []string{"-f", "-qq", "-c", "-w", "-o", out, "-e", "trace=" + strings.Join(syncCalls, ",")}
	for _, pid := range pids {
		args = append(args, "-p", strconv.Itoa(pid))
	}
	cmd := exec.CommandContext(ctx, "strace", args...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		return nil, 0, err
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	if err := awaitTraced(pids, exited); err != nil {
		_ = cmd.Process.Kill()
		return nil, 0, fmt.Errorf("strace: %w %s", err, stderr.String())
	}
	werr := work()
	// strace detaches on SIGINT and writes its summary.
	_ = cmd.Process.Signal(syscall.SIGINT)
	select {
	case <-exited:
	case <-time.After(time.Minute):
		_ = cmd.Process.Kill()
		return nil, 0, errors.New("strace did not detach within a minute")
	}
	if werr != nil {
		return nil, 0, werr
	}
	return parseStraceSummary(out)
}

// awaitTraced waits until every one of pids that still exists has a
// tracer.
func awaitTraced(pids []int, exited <-chan error) error {
	deadline := time.Now().Add(30 * time.Second)
	for {
		pending := 0
		for _, pid := range pids {
			tracer, ok := tracerOf(pid)
			if ok && tracer == 0 {
				pending++
			}
		}
		if pending == 0 {
			return nil
		}
		select {
		case err := <-exited:
			return fmt.Errorf("exited before it attached (%v)", err)
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d processes not attached within 30s", pending)
		}
	}
}

func tracerOf(pid int) (int, bool) {
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0, false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "TracerPid:"); ok {
			n, err := strconv.Atoi(strings.TrimSpace(v))
			return n, err == nil
		}
	}
	return 0, false
}

// parseStraceSummary reads strace -c's table: the calls of each
// syscall's row (the errors column may be empty) and the seconds of all.
func parseStraceSummary(path string) (map[string]int, float64, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, 0, err
	}
	calls := map[string]int{}
	var seconds float64
	for line := range strings.Lines(string(data)) {
		f := strings.Fields(line)
		if len(f) < 5 {
			continue
		}
		n, err := strconv.Atoi(f[3])
		if err != nil {
			continue
		}
		s, err := strconv.ParseFloat(f[1], 64)
		if err != nil {
			continue
		}
		if name := f[len(f)-1]; name != "total" {
			calls[name] = n
			seconds += s
		}
	}
	return calls, seconds, nil
}
