package engine

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"
)

// Info is what a running engine publishes about itself in
// <root>/.orbit/state/engine.json, so that CLI commands on the same root
// find it.
type Info struct {
	PID        int       `json:"pid"`
	URL        string    `json:"url"`
	Engine     string    `json:"engine"`
	Root       string    `json:"root"`
	Durability string    `json:"durability"`
	Started    time.Time `json:"started"`
	Background bool      `json:"background"`
	// Settings are the provider settings of the engine's environment (see
	// Setting): what its agent steps run with, whoever requests them.
	Settings []Setting `json:"settings,omitempty"`
	// Console is where the engine serves the web console; nil when it
	// serves none.
	Console *ConsoleInfo `json:"console,omitempty"`
}

// ConsoleInfo is where an engine serves its web console, and which token
// the console asks for.
type ConsoleInfo struct {
	// URL is the console's address, http://host:port (the port it took).
	URL string `json:"url"`
	// OwnerToken: the console asks for the token in its root's
	// .orbit/state/console.token; false: for the --http-token the engine
	// was started with, which nothing records.
	OwnerToken bool `json:"owner_token"`
}

// StateDir is where an engine keeps its files under a project root.
func StateDir(root string) string { return filepath.Join(root, ".orbit", "state") }

// CredsDir is where the project's NATS identities live (see
// events.EnsureCreds): only their owner may read it.
func CredsDir(root string) string { return filepath.Join(StateDir(root), "creds") }

func infoPath(root string) string { return filepath.Join(StateDir(root), "engine.json") }

// LogPath is where a background engine writes its log (its stdout and
// stderr).
func LogPath(root string) string { return filepath.Join(StateDir(root), "engine.log") }

// EnsureStateDir makes root's state directory, owner-only (0700), and
// narrows it and the engine's log (0600) back when someone widened them,
// as events.EnsureCreds does the seeds: the log names runs, steps and
// errors, and the directory holds the views and the store.
func EnsureStateDir(root string) error {
	dir := StateDir(root)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	if err := narrowMode(dir, 0o700); err != nil {
		return err
	}
	return narrowMode(LogPath(root), 0o600)
}

// narrowMode removes every permission bit of path beyond want; a missing
// path is left missing.
func narrowMode(path string, want os.FileMode) error {
	fi, err := os.Stat(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil || fi.Mode().Perm()&^want == 0 {
		return err
	}
	if err := os.Chmod(path, fi.Mode().Perm()&want); err != nil {
		return fmt.Errorf("narrowing the mode of %s: %w", path, err)
	}
	return nil
}

// ReadInfo returns the engine info recorded for root. It fails with
// os.ErrNotExist when there is none or when the recorded process is gone.
func ReadInfo(root string) (*Info, error) {
	data, err := os.ReadFile(infoPath(root))
	if err != nil {
		return nil, err
	}
	var info Info
	if err := json.Unmarshal(data, &info); err != nil {
		return nil, fmt.Errorf("%s: %w", infoPath(root), err)
	}
	if !Running(info.PID) {
		return nil, fmt.Errorf("engine %d is gone: %w", info.PID, os.ErrNotExist)
	}
	return &info, nil
}

// writeInfo records info atomically (write to a temp file, then rename).
func writeInfo(root string, info *Info) error {
	data, err := json.MarshalIndent(info, "", "  ")
	if err != nil {
		return err
	}
	tmp := infoPath(root) + ".tmp"
	if err := os.WriteFile(tmp, append(data, '\n'), 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, infoPath(root))
}

// removeInfo deletes the info file if it still describes this process.
func removeInfo(root string) {
	data, err := os.ReadFile(infoPath(root))
	if err != nil {
		return
	}
	var info Info
	if json.Unmarshal(data, &info) == nil && info.PID == os.Getpid() {
		_ = os.Remove(infoPath(root))
	}
}

// Running reports whether process pid runs: it exists and has not exited.
// A zombie (exited, not yet reaped by its parent: a parent that waits for
// nothing, or a pid 1 that reaps nothing, as in some containers) does not
// run.
func Running(pid int) bool {
	if pid <= 0 {
		return false
	}
	if err := syscall.Kill(pid, 0); err != nil && !errors.Is(err, syscall.EPERM) {
		return false
	}
	data, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		// No /proc to ask: the signal's answer is all there is. Gone
		// since the signal: not running.
		return !errors.Is(err, fs.ErrNotExist) || !procMounted()
	}
	// "pid (comm) state …": the state follows the last ')'.
	rest := data[bytes.LastIndexByte(data, ')')+1:]
	return !bytes.HasPrefix(bytes.TrimSpace(rest), []byte("Z"))
}

// procMounted reports whether /proc describes processes.
func procMounted() bool {
	_, err := os.Stat("/proc/self/stat")
	return err == nil
}
