package testkit

import (
	"bytes"
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
)

var (
	buildOnce sync.Once
	buildDir  string
	buildPath string
	buildErr  error
)

// Main runs a package's tests and then removes the binary Binary built for
// them: every package whose tests use Binary (or a Project) calls it from
// its TestMain.
func Main(m *testing.M) {
	code := m.Run()
	if buildDir != "" {
		os.RemoveAll(buildDir)
	}
	os.Exit(code)
}

// Binary builds cmd/orbit once per test process and returns its path. The
// build is removed by Main when the process's tests end. It is built as
// make build builds bin/orbit (-trimpath, -ldflags "-s -w"; the build tags
// come from GOFLAGS, as make's): the compiled packages are then the ones
// make build left in Go's build cache, and each test process that needs
// the binary only links it, where its own flags would compile every
// package of the module again.
func Binary(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "orbit-bin-")
		if err != nil {
			buildErr = err
			return
		}
		buildDir = dir
		buildPath = filepath.Join(dir, "orbit")
		cmd := exec.Command("go", "build", "-trimpath", "-ldflags", "-s -w", "-o", buildPath, "./cmd/orbit")
		cmd.Dir = ModuleRoot(t)
		out, err := cmd.CombinedOutput()
		if err != nil {
			buildErr = errors.New(string(out))
		}
	})
	if buildErr != nil {
		t.Fatalf("building orbit: %v", buildErr)
	}
	return buildPath
}

// ModuleRoot returns the directory of the go.mod of this module.
func ModuleRoot(t testing.TB) string {
	t.Helper()
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		t.Fatalf("go env GOMOD: %v", err)
	}
	return filepath.Dir(strings.TrimSpace(string(out)))
}

// Project is an initialised Orbit project in a temp directory, driven
// through the real binary.
type Project struct {
	t    testing.TB
	Root string
	Bin  string
	Env  []string // extra environment for every command
}

// NewProject runs `orbit init` in a new temp directory. Engines started in
// it are stopped when the test ends.
func NewProject(t testing.TB) *Project {
	t.Helper()
	return NewProjectIn(t, t.TempDir())
}

// NewProjectIn is NewProject in dir, made if missing: for a test that needs
// a root of a given name.
func NewProjectIn(t testing.TB, dir string) *Project {
	t.Helper()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatalf("project directory: %v", err)
	}
	p := &Project{t: t, Root: dir, Bin: Binary(t)}
	if r := p.Orbit("init"); r.Code != 0 {
		t.Fatalf("orbit init: %s", r)
	}
	t.Cleanup(p.StopEngine)
	return p
}

// Result is what a command printed and how it exited.
type Result struct {
	Stdout, Stderr string
	Code           int
}

func (r Result) String() string {
	return "exit " + strconv.Itoa(r.Code) + "\nstdout:\n" + r.Stdout + "\nstderr:\n" + r.Stderr
}

// Orbit runs the binary with --root set to the project and waits for it.
func (p *Project) Orbit(args ...string) Result {
	p.t.Helper()
	return p.OrbitIn(nil, args...)
}

// OrbitIn is Orbit with stdin.
func (p *Project) OrbitIn(stdin []byte, args ...string) Result {
	p.t.Helper()
	cmd := p.Command(args...)
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	var exitErr *exec.ExitError
	if errors.As(err, &exitErr) {
		code = exitErr.ExitCode()
	} else if err != nil {
		p.t.Fatalf("running orbit %v: %v", args, err)
	}
	return Result{Stdout: stdout.String(), Stderr: stderr.String(), Code: code}
}

// Command returns an unstarted command for the binary on this project.
func (p *Project) Command(args ...string) *exec.Cmd {
	cmd := exec.Command(p.Bin, append([]string{"--root", p.Root}, args...)...)
	cmd.Env = append(cleanEnv(), p.Env...)
	return cmd
}

// cleanEnv is the test process environment without Orbit's own variables,
// so that a developer's settings cannot leak into a test.
func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "ORBIT_") {
			env = append(env, kv)
		}
	}
	return env
}

// EnginePID returns the pid recorded in the project's engine.json, or 0.
func (p *Project) EnginePID() int {
	data, err := os.ReadFile(filepath.Join(p.Root, ".orbit", "state", "engine.json"))
	if err != nil {
		return 0
	}
	var info struct {
		PID int `json:"pid"`
	}
	if json.Unmarshal(data, &info) != nil {
		return 0
	}
	return info.PID
}

// StopEngine stops the project's engine, if one runs, and waits until it is
// gone.
func (p *Project) StopEngine() {
	pid := p.EnginePID()
	if pid == 0 {
		return
	}
	_ = syscall.Kill(pid, syscall.SIGTERM)
	if !WaitGone(pid, 10*time.Second) {
		_ = syscall.Kill(pid, syscall.SIGKILL)
		WaitGone(pid, 5*time.Second)
	}
}

// Runs reports whether process pid runs: it exists and is not a zombie
// (exited, its parent not having reaped it: a parent that is stopped, or a
// pid 1 that reaps nothing, as in some containers).
func Runs(pid int) bool {
	data, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return false
	}
	// pid (comm) state ...: the state follows the last ')'.
	rest := string(data[strings.LastIndexByte(string(data), ')')+1:])
	return !strings.HasPrefix(strings.TrimSpace(rest), "Z")
}

// WaitDead waits until process pid no longer runs (see Runs).
func WaitDead(pid int, timeout time.Duration) bool {
	deadline := time.Now().Add(timeout)
	for Runs(pid) {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
	return true
}

// WaitGone waits until no process has the given pid.
func WaitGone(pid int, timeout time.Duration) bool {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
			return true
		}
		time.Sleep(20 * time.Millisecond)
	}
	return false
}

// WriteFile writes a file under the project root, creating directories.
func (p *Project) WriteFile(rel, content string) string {
	p.t.Helper()
	path := filepath.Join(p.Root, rel)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		p.t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		p.t.Fatal(err)
	}
	return path
}
