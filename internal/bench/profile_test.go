package bench

import (
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"runtime/trace"
	"syscall"
	"testing"
	"time"
)

// profileEnv names a directory where a benchmark that supports it writes
// CPU and allocation profiles of its measured part only (not of the setup
// that fills a log), for `go tool pprof`.
const profileEnv = "ORBIT_BENCH_PROFILE"

// profilePart starts profiling the part of a benchmark called name when
// profileEnv is set, and returns what stops it; each run of the part
// replaces the profiles of the one before. They are a CPU profile
// <dir>/<name>-cpu.pprof, an execution trace <dir>/<name>-trace.out (`go
// tool trace`: goroutines, blocking, the scheduler's latency) and the
// allocations made meanwhile, <dir>/<name>-allocs.pprof (read it with
// -diff_base <dir>/<name>-allocs-base.pprof, the allocations before the
// part began).
func profilePart(b *testing.B, name string) (stop func()) {
	b.Helper()
	dir := os.Getenv(profileEnv)
	if dir == "" {
		return func() {}
	}
	if err := os.MkdirAll(dir, 0o750); err != nil {
		b.Fatal(err)
	}
	writeAllocs := func(file string) {
		runtime.GC() // the profile is as of the last collection
		f, err := os.Create(filepath.Join(dir, file))
		if err != nil {
			b.Fatal(err)
		}
		defer f.Close()
		if err := pprof.Lookup("allocs").WriteTo(f, 0); err != nil {
			b.Fatal(err)
		}
	}
	writeAllocs(name + "-allocs-base.pprof")
	cpu, err := os.Create(filepath.Join(dir, name+"-cpu.pprof"))
	if err != nil {
		b.Fatal(err)
	}
	if err := pprof.StartCPUProfile(cpu); err != nil {
		b.Fatal(err)
	}
	tr, err := os.Create(filepath.Join(dir, name+"-trace.out"))
	if err != nil {
		b.Fatal(err)
	}
	if err := trace.Start(tr); err != nil {
		b.Fatal(err)
	}
	return func() {
		trace.Stop()
		pprof.StopCPUProfile()
		if err := tr.Close(); err != nil {
			b.Fatal(err)
		}
		if err := cpu.Close(); err != nil {
			b.Fatal(err)
		}
		writeAllocs(name + "-allocs.pprof")
	}
}

// processCPU returns the user and system CPU time the process has used.
func processCPU(b *testing.B) time.Duration {
	b.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
