// Command orbit runs jobs of shell commands, built-in actions and LLM coding
// agents on an event-sourced engine, and shows what happened.
package main

import (
	"context"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/orbitrun/orbit/internal/sandbox"
)

func main() {
	// The sandbox's step (internal/sandbox) is this binary re-executed:
	// it must be recognised before anything else runs.
	sandbox.Init()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := Main(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// Main runs the orbit command line with args and returns the exit code:
// 0 success, 1 the run or task ended unsuccessfully, 2 usage, validation or
// load error, 3 engine unavailable.
func Main(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	a := &app{stdin: stdin, stdout: stdout, stderr: stderr}
	cmd := a.rootCommand()
	cmd.SetArgs(args)
	cmd.SetIn(stdin)
	cmd.SetOut(stdout)
	cmd.SetErr(stderr)
	err := cmd.ExecuteContext(ctx)
	return a.exit(err)
}
