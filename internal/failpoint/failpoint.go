// Package failpoint lets crash tests stop the engine at chosen points. The
// environment variable ORBIT_FAILPOINT names points, comma-separated, each
// optionally with the hit to crash at (`worker-after-finished@3`: the third
// time the point is reached; default the first). Reaching it kills the
// process with SIGKILL, exactly as a crash would: no deferred function
// runs, nothing is flushed. A few points instead make the engine behave as
// it would when something outside it misbehaves (Reached). With the
// variable unset — always, outside those tests — Hit does nothing and
// Reached is false.
package failpoint

import (
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// Env is the variable that names the points to crash at.
const Env = "ORBIT_FAILPOINT"

var (
	mu   sync.Mutex
	hits = map[string]int{}
)

// Hit kills the process if name is one of the points ORBIT_FAILPOINT names
// and this is the hit it names.
func Hit(name string) {
	if Reached(name) {
		_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {} // the signal is on its way
	}
}

// Armed reports whether ORBIT_FAILPOINT names any point: a caller whose
// point's name costs something to make asks it first.
func Armed() bool { return os.Getenv(Env) != "" }

// Reached reports whether name is one of the points ORBIT_FAILPOINT names
// and this is the hit it names, counting hits as Hit does: for a point
// where the caller acts out a fault rather than crash.
func Reached(name string) bool {
	points := os.Getenv(Env)
	if points == "" {
		return false
	}
	for _, p := range strings.Split(points, ",") {
		point, nth, _ := strings.Cut(strings.TrimSpace(p), "@")
		if point != name {
			continue
		}
		want := 1
		if n, err := strconv.Atoi(nth); err == nil && n > 0 {
			want = n
		}
		mu.Lock()
		hits[name]++
		now := hits[name]
		mu.Unlock()
		if now == want {
			return true
		}
	}
	return false
}
