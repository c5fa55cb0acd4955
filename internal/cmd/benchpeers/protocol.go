package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

// The line protocol between the driver and a side (its peers' half is
// internal/bench/peers/side, which mirrors these types): a side prints a
// hello once its system is ready, then answers each request read on stdin
// with the wall time of that workload, measured on its side. Its protocol
// lines start with prefix; every other line on its stdout or stderr goes
// to its log file.
const prefix = "@bench "

// The workloads, each in a trivial variant and one whose every step forks
// echo (request.Fork).
const (
	sequential = "W1" // N steps one after another in one run
	fanOut     = "W2" // N items, Width at once, then a fan-in of their outputs
	runs       = "W3" // N runs at once, each of three steps one after another
)

type request struct {
	Workload string `json:"workload"`
	Fork     bool   `json:"fork"`
	N        int    `json:"n"`
	Width    int    `json:"width,omitempty"`
}

type hello struct {
	System     string            `json:"system"`
	Versions   map[string]string `json:"versions"`
	Durability string            `json:"durability"`
}

type answer struct {
	Seconds float64 `json:"seconds"`
	Error   string  `json:"error,omitempty"`
}

type message struct {
	Hello  *hello  `json:"hello,omitempty"`
	Answer *answer `json:"answer,omitempty"`
}

// side is a running side: a process of the driver's speaking the protocol.
type side struct {
	name  string
	cmd   *exec.Cmd
	in    io.WriteCloser
	msgs  chan message
	log   string // the file its other output goes to
	hello hello
	// pids are the processes whose system calls are the system's: the
	// side's, and the servers it talks to.
	pids   func() []int
	exited chan struct{}
}

// startSide starts argv and waits up to timeout for its hello.
func startSide(ctx context.Context, name string, argv []string, env []string, logPath string, timeout time.Duration) (*side, error) {
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stderr = logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	in, err := cmd.StdinPipe()
	if err != nil {
		logFile.Close()
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		logFile.Close()
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("starting %s's side: %w", name, err)
	}
	s := &side{name: name, cmd: cmd, in: in, msgs: make(chan message, 1), log: logPath, exited: make(chan struct{})}
	s.pids = func() []int { return []int{cmd.Process.Pid} }
	go func() {
		defer close(s.exited)
		defer logFile.Close()
		defer close(s.msgs)
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 64*1024), 4*1024*1024)
		for sc.Scan() {
			line := sc.Text()
			body, ok := strings.CutPrefix(line, prefix)
			if !ok {
				fmt.Fprintln(logFile, line)
				continue
			}
			var m message
			if err := json.Unmarshal([]byte(body), &m); err != nil {
				fmt.Fprintf(logFile, "bad protocol line %q: %v\n", line, err)
				continue
			}
			s.msgs <- m
		}
		_ = cmd.Wait()
	}()
	m, err := s.next(ctx, timeout)
	if err != nil {
		s.close()
		return nil, fmt.Errorf("%s's side did not start: %w", name, err)
	}
	if m.Hello == nil {
		s.close()
		return nil, fmt.Errorf("%s's side did not start: it answered before its hello", name)
	}
	s.hello = *m.Hello
	if s.hello.Versions == nil {
		s.hello.Versions = map[string]string{}
	}
	return s, nil
}

// run asks the side for one workload and returns its wall time.
func (s *side) run(ctx context.Context, req request, timeout time.Duration) (time.Duration, error) {
	b, err := json.Marshal(req)
	if err != nil {
		return 0, err
	}
	if _, err := fmt.Fprintf(s.in, "%s\n", b); err != nil {
		return 0, fmt.Errorf("%s: %w (see %s)", s.name, err, s.log)
	}
	m, err := s.next(ctx, timeout)
	if err != nil {
		return 0, err
	}
	if m.Answer == nil {
		return 0, fmt.Errorf("%s: a hello where an answer was due", s.name)
	}
	if m.Answer.Error != "" {
		return 0, fmt.Errorf("%s: %s", s.name, m.Answer.Error)
	}
	return time.Duration(m.Answer.Seconds * float64(time.Second)), nil
}

var errSideExited = errors.New("the side exited")

func (s *side) next(ctx context.Context, timeout time.Duration) (message, error) {
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case m, ok := <-s.msgs:
		if !ok {
			return message{}, fmt.Errorf("%s: %w (%s); see %s", s.name, errSideExited, s.cmd.ProcessState, s.log)
		}
		return m, nil
	case <-timer.C:
		return message{}, fmt.Errorf("%s: no answer within %s; see %s", s.name, timeout, s.log)
	case <-ctx.Done():
		return message{}, ctx.Err()
	}
}

// close ends the side: its stdin closes, and a side still there after
// 20s is killed with its process group.
func (s *side) close() {
	s.in.Close()
	select {
	case <-s.exited:
	case <-time.After(20 * time.Second):
		_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
		<-s.exited
	}
}
