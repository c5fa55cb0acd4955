package soak_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/orbitrun/orbit/engine"
	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/internal/testkit"
)

// engineProc is `orbit serve` running as a child process of the test, so
// that its memory can be read from /proc apart from the test's own.
type engineProc struct {
	cmd  *exec.Cmd
	url  string
	root string

	mu       sync.Mutex
	warnings []string // WARN and ERROR lines of the engine's log, in order
	exited   chan struct{}
}

// startEngine starts `orbit serve` on a free port of the project and waits
// until it serves and has recorded its address in engine.json.
func startEngine(t *testing.T, p *testkit.Project) *engineProc {
	t.Helper()
	e := &engineProc{cmd: p.Command("serve", "--listen", "127.0.0.1:0"), exited: make(chan struct{})}
	stderr, err := e.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := e.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ready := make(chan struct{})
	go func() {
		defer close(e.exited)
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64*1024), 1024*1024)
		signalled := false
		for sc.Scan() {
			line := sc.Text()
			if !signalled && strings.Contains(line, "engine running") {
				close(ready)
				signalled = true
			}
			if strings.Contains(line, "level=WARN") || strings.Contains(line, "level=ERROR") {
				e.mu.Lock()
				e.warnings = append(e.warnings, line)
				e.mu.Unlock()
			}
		}
		_ = e.cmd.Wait()
	}()
	t.Cleanup(func() {
		_ = e.cmd.Process.Kill()
		<-e.exited
	})
	select {
	case <-ready:
	case <-e.exited:
		t.Fatal("orbit serve exited before it served")
	case <-time.After(30 * time.Second):
		t.Fatal("orbit serve did not start within 30s")
	}

	data, err := os.ReadFile(filepath.Join(p.Root, ".orbit", "state", "engine.json"))
	if err != nil {
		t.Fatalf("reading engine.json: %v", err)
	}
	var info struct {
		PID int    `json:"pid"`
		URL string `json:"url"`
	}
	if err := json.Unmarshal(data, &info); err != nil {
		t.Fatalf("engine.json: %v", err)
	}
	if info.PID != e.cmd.Process.Pid {
		t.Fatalf("engine.json names pid %d, serve is %d", info.PID, e.cmd.Process.Pid)
	}
	e.url = info.URL
	e.root = p.Root
	return e
}

// seed is the seed file of one of the project's identities.
func (e *engineProc) seed(id events.Identity) string {
	return events.CredsFile(engine.CredsDir(e.root), id)
}

// Warnings returns the WARN and ERROR lines the engine has logged so far.
func (e *engineProc) Warnings() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]string(nil), e.warnings...)
}

// Stop asks the engine to stop (SIGTERM) and waits for it, up to timeout.
// It reports whether the engine exited in time.
func (e *engineProc) Stop(timeout time.Duration) bool {
	_ = e.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-e.exited:
		return true
	case <-time.After(timeout):
		return false
	}
}

// procStatus returns a field of /proc/<pid>/status in bytes ("VmRSS",
// "VmHWM"); pid 0 means this process. It returns 0 when the process or the
// field is gone.
func procStatus(pid int, field string) int64 {
	path := "/proc/self/status"
	if pid != 0 {
		path = "/proc/" + strconv.Itoa(pid) + "/status"
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	for line := range bytes.Lines(data) {
		name, value, ok := strings.Cut(string(line), ":")
		if !ok || name != field {
			continue
		}
		f := strings.Fields(value) // "123456 kB"
		if len(f) != 2 || f[1] != "kB" {
			return 0
		}
		kb, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return 0
		}
		return kb * 1024
	}
	return 0
}

// rssSampler reads a process's resident set every interval and keeps the
// largest value and the series, so that growth shows as well as the peak.
type rssSampler struct {
	pid  int
	stop chan struct{}
	done chan struct{}

	mu      sync.Mutex
	max     int64
	samples []int64
}

func sampleRSS(pid int, every time.Duration) *rssSampler {
	s := &rssSampler{pid: pid, stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		tick := time.NewTicker(every)
		defer tick.Stop()
		for {
			s.take()
			select {
			case <-s.stop:
				return
			case <-tick.C:
			}
		}
	}()
	return s
}

func (s *rssSampler) take() {
	rss := procStatus(s.pid, "VmRSS")
	if rss == 0 {
		return
	}
	s.mu.Lock()
	s.samples = append(s.samples, rss)
	s.max = max(s.max, rss)
	s.mu.Unlock()
}

// Stop ends sampling and returns the largest sample and every sample.
func (s *rssSampler) Stop() (int64, []int64) {
	select {
	case <-s.stop:
	default:
		close(s.stop)
	}
	<-s.done
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.max, append([]int64(nil), s.samples...)
}

func mib(b int64) string { return strconv.FormatFloat(float64(b)/(1<<20), 'f', 0, 64) + " MiB" }

// cpuTime returns the user and system CPU time a process has used so far,
// from /proc/<pid>/stat (0 when it is gone).
func cpuTime(pid int) time.Duration {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	// The command name may hold spaces: the fields that follow it start
	// after its closing parenthesis, at field 3 (state).
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(string(data[i+1:]))
	if len(f) < 13 {
		return 0
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0
	}
	const clockTicks = 100 // USER_HZ on Linux
	return time.Duration(utime+stime) * time.Second / clockTicks
}

// leftovers waits, up to timeout, until the engine has no command left on
// its work queue and holds no lease, and returns what is left then: the
// messages of ORBIT_COMMANDS and ORBIT_STEPS and the live keys of
// orbit_leases. Workers ack
// a command without waiting after its step.finished is stored, so the queue
// may lag the runs' ends by a moment.
// It signs in as the engine: only the engine may read the queue and the
// leases.
func leftovers(ctx context.Context, t *testing.T, eng *engineProc, timeout time.Duration) (uint64, []string) {
	t.Helper()
	key, err := nats.NkeyOptionFromSeed(eng.seed(events.IdentityEngine))
	if err != nil {
		t.Fatal(err)
	}
	nc, err := nats.Connect(eng.url, nats.Name("orbit-soak-inspect"), key)
	if err != nil {
		t.Fatalf("connecting to %s: %v", eng.url, err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	cmds, err := js.Stream(ctx, events.CommandsStream)
	if err != nil {
		t.Fatal(err)
	}
	steps, err := js.Stream(ctx, events.StepsStream)
	if err != nil {
		t.Fatal(err)
	}
	kv, err := js.KeyValue(ctx, events.LeasesBucket)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(timeout)
	for {
		var queued uint64
		for stream, keeper := range map[jetstream.Stream]string{cmds: events.KeeperSubject, steps: events.StepsKeeperSubject} {
			info, err := stream.Info(ctx, jetstream.WithSubjectFilter(keeper))
			if err != nil {
				t.Fatal(err)
			}
			queued += info.State.Msgs - info.State.Subjects[keeper]
		}
		leases, err := kv.Keys(ctx)
		if errors.Is(err, jetstream.ErrNoKeysFound) {
			leases, err = nil, nil
		}
		if err != nil {
			t.Fatal(err)
		}
		if (queued == 0 && len(leases) == 0) || time.Now().After(deadline) {
			return queued, leases
		}
		time.Sleep(100 * time.Millisecond)
	}
}
