package main

import (
	"context"
	"debug/buildinfo"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// temporalServer is Temporal's dev server (`temporal server start-dev`)
// on an SQLite file, with synchronous=FULL.
type temporalServer struct {
	cmd        *exec.Cmd
	address    string
	version    string
	durability string
	exited     chan struct{}
}

// defaultPragmas are what the dev server is started with unless told
// otherwise: synchronous=FULL makes every commit fsync, and SQLite keeps
// its default rollback journal (the dev server sets no journal_mode).
const defaultPragmas = "synchronous=FULL"

// startTemporal starts the dev server on dbFile with pragmas, each given
// with --sqlite-pragma.
func startTemporal(ctx context.Context, bin, dbFile, logPath string, pragmas []string) (*temporalServer, error) {
	out, err := exec.CommandContext(ctx, bin, "--version").Output()
	if err != nil {
		return nil, fmt.Errorf("%s --version: %w", bin, err)
	}
	ports := make([]int, 3)
	for i := range ports {
		if ports[i], err = freePort(); err != nil {
			return nil, err
		}
	}
	args := []string{"server", "start-dev", "--db-filename", dbFile, "--ip", "127.0.0.1",
		"--port", strconv.Itoa(ports[0]), "--http-port", strconv.Itoa(ports[1]), "--metrics-port", strconv.Itoa(ports[2]),
		"--headless", "--log-level", "warn"}
	for _, p := range pragmas {
		args = append(args, "--sqlite-pragma", p)
	}
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, err
	}
	s := &temporalServer{
		cmd:        cmd,
		address:    "127.0.0.1:" + strconv.Itoa(ports[0]),
		version:    cliVersion(bin, string(out)),
		durability: sqliteDurability(pragmas),
		exited:     make(chan struct{}),
	}
	go func() {
		_ = cmd.Wait()
		logFile.Close()
		close(s.exited)
	}()
	return s, nil
}

func (s *temporalServer) stop() {
	_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-s.exited:
	case <-time.After(30 * time.Second):
		_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
		<-s.exited
	}
}

// cliVersion is the Temporal CLI's version: its module's, as its build
// recorded it (a CLI built with go install says 0.0.0-DEV of itself), and
// what --version says of the server and UI within.
func cliVersion(bin, said string) string {
	v := strings.TrimSpace(strings.TrimPrefix(said, "temporal version "))
	info, err := buildinfo.ReadFile(bin)
	if err != nil || info.Main.Version == "" || info.Main.Version == "(devel)" {
		return v
	}
	if _, within, ok := strings.Cut(v, " "); ok {
		return "CLI " + info.Main.Version + " " + within
	}
	return "CLI " + info.Main.Version
}

func sqliteDurability(pragmas []string) string {
	d := "an on-disk SQLite database, " + strings.Join(pragmas, ", ")
	for _, p := range pragmas {
		if strings.HasPrefix(strings.ToLower(p), "journal_mode=") {
			return d
		}
	}
	return d + " (journal_mode at SQLite's default, a rollback journal)"
}
