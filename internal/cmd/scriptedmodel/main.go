// Command scriptedmodel serves the Anthropic Messages API (-api anthropic,
// testkit.AnthropicServer) or the OpenAI Responses API (-api openai,
// testkit.OpenAIServer) on loopback from a script of turns, so that a real
// CLI agent can be shown at work offline: make demo-groundhog-cli runs
// Claude Code against it, make demo-groundhog-codex Codex. It prints its
// base URL on stdout, serves until it gets SIGINT or SIGTERM, and then
// prints on stderr what each scripted request held.
//
// The script is a JSON object {"turns": [...]}, each turn as
// testkit.Turn: {"text": "...", "tools": [{"id": "...", "name": "Bash",
// "input": {...}}]}; a Responses function_call in a namespace also has
// "namespace" (Codex's MCP tools: "mcp__orbit").
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"testing"

	"github.com/orbitrun/orbit/internal/testkit"
)

// host is what the scripted server needs of a testing.TB outside a test:
// a failure ends the program, cleanups run when it ends. Any other method
// of testing.TB is not called by the server.
type host struct {
	testing.TB
	cleanups []func()
}

func (h *host) Helper()                      {}
func (h *host) Cleanup(f func())             { h.cleanups = append(h.cleanups, f) }
func (h *host) Fatalf(f string, args ...any) { fail(fmt.Errorf(f, args...)) }

func fail(err error) {
	fmt.Fprintln(os.Stderr, "scriptedmodel:", err)
	os.Exit(1)
}

func main() {
	path := flag.String("script", "", "the script of turns (JSON)")
	api := flag.String("api", "anthropic", "the API to speak: anthropic or openai")
	flag.Parse()
	if *path == "" || flag.NArg() > 0 || (*api != "anthropic" && *api != "openai") {
		fmt.Fprintln(os.Stderr, "usage: scriptedmodel -script FILE [-api anthropic|openai]")
		os.Exit(2)
	}
	data, err := os.ReadFile(*path)
	if err != nil {
		fail(err)
	}
	var script struct {
		Turns []testkit.Turn `json:"turns"`
	}
	dec := json.NewDecoder(strings.NewReader(string(data)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&script); err != nil {
		fail(fmt.Errorf("%s: %w", *path, err))
	}
	h := &host{}
	var srv interface {
		URL() string
		Scripted() []testkit.ModelRequest
	}
	if *api == "openai" {
		srv = testkit.NewOpenAIServer(h, script.Turns...)
	} else {
		srv = testkit.NewAnthropicServer(h, script.Turns...)
	}
	fmt.Println(srv.URL())

	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	<-sig
	for i, req := range srv.Scripted() {
		fmt.Fprintf(os.Stderr, "request %d: %s\n", i+1, describe(req))
	}
	for i := len(h.cleanups) - 1; i >= 0; i-- {
		h.cleanups[i]()
	}
}

// describe says whether a request opens a session (no model turn in it
// yet) and whether it carries a failure report. A model turn is an
// assistant message (Anthropic) or an output item sent back as input
// (Responses: a message of the assistant, a function_call).
func describe(req testkit.ModelRequest) string {
	turns := 0
	for _, raw := range req.Messages {
		var m struct{ Role, Type string }
		if json.Unmarshal(raw, &m) == nil && (m.Role == "assistant" || m.Type == "function_call") {
			turns++
		}
	}
	what := fmt.Sprintf("a session's request after %d model turn(s)", turns)
	if turns == 0 {
		what = "a fresh session's first request"
	}
	if strings.Contains(string(req.Raw), "The last attempt at this checkpoint failed") {
		what += ", with the last attempt's failure report"
	}
	return what
}
