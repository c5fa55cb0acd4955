// Package failpoint lets crash tests stop the engine at chosen points. The
// environment variable ORBIT_FAILPOINT names points (comma-separated);
// reaching a named point kills the process with SIGKILL, exactly as a crash
// would: no deferred function runs, nothing is flushed. With the variable
// unset — always, outside those tests — Hit does nothing.
package failpoint

import (
	"os"
	"strings"
	"syscall"
)

// Env is the variable that names the points to crash at.
const Env = "ORBIT_FAILPOINT"

// Hit kills the process if name is one of the points ORBIT_FAILPOINT names.
func Hit(name string) {
	points := os.Getenv(Env)
	if points == "" {
		return
	}
	for _, p := range strings.Split(points, ",") {
		if strings.TrimSpace(p) == name {
			_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
			select {} // the signal is on its way
		}
	}
}
