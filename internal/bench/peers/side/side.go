// Package side is a peer's half of bench-peers' line protocol
// (internal/cmd/benchpeers in Orbit's module, whose protocol.go this
// mirrors): the driver starts a side, which prints a hello once its system
// is ready, then reads one request a line on stdin and answers each with
// the wall time of the workload, measured here so that the protocol's own
// round trip is not counted. Answers are prefixed with Prefix; anything
// else a library prints on stdout is the driver's to pass on as a log.
// The side exits when stdin closes.
package side

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Prefix marks the protocol's lines on a side's stdout.
const Prefix = "@bench "

// The workloads, each in a trivial variant and one whose every step forks
// echo (Request.Fork).
const (
	Sequential = "W1" // N steps one after another in one run
	FanOut     = "W2" // N items, Width at once, then a fan-in of their outputs
	Runs       = "W3" // N runs at once, each of three steps one after another
)

// Request asks a side to run one workload once.
type Request struct {
	Workload string `json:"workload"`
	Fork     bool   `json:"fork"`
	N        int    `json:"n"`
	Width    int    `json:"width,omitempty"`
}

// Hello is what a side says once its system is ready: its name, the
// versions of what it runs, and how durability is set on its side.
type Hello struct {
	System     string            `json:"system"`
	Versions   map[string]string `json:"versions"`
	Durability string            `json:"durability"`
}

// Answer is a side's answer to a Request.
type Answer struct {
	Seconds float64 `json:"seconds"`
	Error   string  `json:"error,omitempty"`
}

type message struct {
	Hello  *Hello  `json:"hello,omitempty"`
	Answer *Answer `json:"answer,omitempty"`
}

// Serve says hello on out, then runs each request read from in with run
// and answers it, until in ends or ctx is done.
func Serve(ctx context.Context, in io.Reader, out io.Writer, hello Hello, run func(context.Context, Request) error) error {
	if err := send(out, message{Hello: &hello}); err != nil {
		return err
	}
	sc := bufio.NewScanner(in)
	for sc.Scan() {
		if err := ctx.Err(); err != nil {
			return err
		}
		var req Request
		if err := json.Unmarshal(sc.Bytes(), &req); err != nil {
			return fmt.Errorf("request %q: %w", sc.Text(), err)
		}
		start := time.Now()
		err := run(ctx, req)
		a := Answer{Seconds: time.Since(start).Seconds()}
		if err != nil {
			a.Error = err.Error()
		}
		if err := send(out, message{Answer: &a}); err != nil {
			return err
		}
	}
	return sc.Err()
}

func send(out io.Writer, m message) error {
	b, err := json.Marshal(m)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(out, "%s%s\n", Prefix, b)
	return err
}

// Step is the work of one step: item i itself, or with fork what `echo i`
// printed.
func Step(ctx context.Context, i int, fork bool) (string, error) {
	if !fork {
		return strconv.Itoa(i), nil
	}
	out, err := exec.CommandContext(ctx, "echo", strconv.Itoa(i)).Output()
	if err != nil {
		return "", fmt.Errorf("echo %d: %w", i, err)
	}
	return strings.TrimSuffix(string(out), "\n"), nil
}

// CheckSequence returns an error unless got is what n steps produce, in
// order.
func CheckSequence(got []string, n int) error {
	if len(got) != n {
		return fmt.Errorf("%d outputs, want %d", len(got), n)
	}
	for i, s := range got {
		if s != strconv.Itoa(i) {
			return fmt.Errorf("output %d is %q, want %q", i, s, strconv.Itoa(i))
		}
	}
	return nil
}

// Concurrently runs f(0) … f(n-1) at once and returns the first error.
func Concurrently(n int, f func(i int) error) error {
	errs := make(chan error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { errs <- f(i) })
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// ModuleVersion is the version of module path this program was built
// with, "unknown" when the build does not say.
func ModuleVersion(path string) string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	for _, m := range info.Deps {
		if m.Path == path {
			if m.Replace != nil {
				return m.Replace.Version
			}
			return m.Version
		}
	}
	return "unknown"
}

// Fail prints err on stderr and exits with status 1.
func Fail(err error) {
	fmt.Fprintln(os.Stderr, err)
	os.Exit(1)
}
