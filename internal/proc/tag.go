package proc

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// TagVar is the environment variable that marks every process Orbit starts
// and, by inheritance, everything those start: `<scope>/<program>`, where
// the scope is what the program runs for (an engine's root, then one step
// execution; see WithScope) and the program part is new for each Start. A
// process that leaves its process group (setsid, a daemon's double fork)
// keeps its environment, and with it the mark by which it is found and
// killed. One that clears the mark and leaves its group has left the
// program on purpose and is spared: an engine that orbit, run by a step,
// starts for another root serves whatever comes after the step. A
// program's cgroup (see cgroups) is where its marked processes are looked
// for; the mark alone finds what an engine or a worker that is gone had
// started (KillScope), whose cgroups no one watches.
const TagVar = "ORBIT_PROCESS_TAG"

type scopeKey struct{}

// WithScope returns a context under which Start marks programs as run for
// scope, within ctx's scope if it has one: KillScope of either finds them
// and what they started.
func WithScope(ctx context.Context, scope string) context.Context {
	return context.WithValue(ctx, scopeKey{}, within(scopeOf(ctx), scope))
}

func within(outer, inner string) string {
	if outer == "" {
		return inner
	}
	return outer + "/" + inner
}

// NewScope returns a fresh scope for WithScope.
func NewScope() string { return newTag() }

func scopeOf(ctx context.Context) string {
	s, _ := ctx.Value(scopeKey{}).(string)
	return s
}

func newTag() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// marked returns the pids of the processes whose environment holds TagVar
// with a value that match accepts. Zombies have no environment any more,
// and processes of other users cannot be read: neither is returned.
func marked(match func(value []byte) bool) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	self := os.Getpid()
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		if value, found, _ := markOf(pid); found && match(value) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// markOf returns the value of TagVar in process pid's environment, and
// whether it has one; read reports whether there was an environment to
// read (not for a zombie, a process gone, or one of another user).
func markOf(pid int) (value []byte, found, read bool) {
	env, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
	if err != nil || len(env) == 0 {
		return nil, false, false
	}
	prefix := []byte(TagVar + "=")
	for entry := range bytes.SplitSeq(env, []byte{0}) {
		if value, ok := bytes.CutPrefix(entry, prefix); ok {
			return value, true, true
		}
	}
	return nil, false, true
}

// killMarked sends SIGKILL to the processes marked as match accepts until
// a look finds none it has not killed already (a process that forks while
// it is killed leaves a child that the next look finds), adding them to
// killed. It does not wait for them to die, and returns how many its last
// look found still running.
func killMarked(match func(value []byte) bool, killed map[int]bool) int {
	var running []int
	for range 50 {
		running = marked(match)
		fresh := 0
		for _, pid := range running {
			if !killed[pid] {
				killed[pid] = true
				fresh++
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
		if fresh == 0 {
			break
		}
	}
	return len(running)
}

// inScope matches the tags of programs run within scope, wherever it
// stands among the scopes a tag nests: scopes are unique names (random, or
// a root's hash), so that is never a different one.
func inScope(scope string) func([]byte) bool {
	first, inner := []byte(scope+"/"), []byte("/"+scope+"/")
	return func(value []byte) bool {
		return scope != "" && (bytes.HasPrefix(value, first) || bytes.Contains(value, inner))
	}
}

func isTag(tag string) func([]byte) bool {
	return func(value []byte) bool { return string(value) == tag }
}

// KillScope sends SIGKILL to every process marked as run within scope (see
// WithScope) and waits, up to patience, until none of them runs: how a
// worker fences what another worker, stopped or dead, had started for a
// step, and how an engine clears what an earlier one on its root left. It
// returns how many processes it killed and whether they were gone in time;
// a process in uninterruptible sleep dies only when that sleep ends.
func KillScope(scope string, patience time.Duration) (killed int, gone bool) {
	match := inScope(scope)
	deadline := time.Now().Add(patience)
	dead := map[int]bool{}
	for {
		if killMarked(match, dead) == 0 {
			return len(dead), true
		}
		if time.Now().After(deadline) {
			return len(dead), false
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// sweeps is the process's sweeper: every Group's Sweep goes through it.
var sweeps sweeper

// sweeper lets the sweeps of programs that end together share their looks
// through /proc, which read the environment of every process on the
// machine: a few milliseconds each on a busy one, more than the program
// itself when it is short. A sweep asked for while a look is under way
// waits for the next look (the one under way may have passed its
// processes already), which serves every sweep asked for meanwhile.
type sweeper struct {
	mu      sync.Mutex
	pending []sweepRequest
	looking bool
}

type sweepRequest struct {
	match func(value []byte) bool
	done  chan struct{}
}

// sweep kills the processes marked as match accepts (see killMarked) and
// returns once a look that started after the call has found none left.
func (s *sweeper) sweep(match func(value []byte) bool) {
	req := sweepRequest{match: match, done: make(chan struct{})}
	s.mu.Lock()
	s.pending = append(s.pending, req)
	if !s.looking {
		s.looking = true
		go s.look()
	}
	s.mu.Unlock()
	<-req.done
}

func (s *sweeper) look() {
	for {
		s.mu.Lock()
		batch := s.pending
		s.pending = nil
		if len(batch) == 0 {
			s.looking = false
			s.mu.Unlock()
			return
		}
		s.mu.Unlock()
		killMarked(func(value []byte) bool {
			for _, r := range batch {
				if r.match(value) {
					return true
				}
			}
			return false
		}, map[int]bool{})
		for _, r := range batch {
			close(r.done)
		}
	}
}
