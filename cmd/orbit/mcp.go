package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sync"

	"github.com/spf13/cobra"

	"github.com/orbitrun/orbit/engine"
	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/groundhog"
	"github.com/orbitrun/orbit/mcp"
)

func (a *app) mcpCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "mcp",
		Short: "Serve the Groundhog verbs to a CLI agent over MCP (stdio)",
		Long: `Speak MCP on stdin and stdout, offering a CLI agent (Claude Code, Codex)
the Groundhog verbs as tools: checkpoint_success {summary, side_effects},
checkpoint_failure {what_tried, what_happened, next_attempt_plan} and
side_effect {kind, target, reversible}. Each call is forwarded to the engine
with the attempt token from ORBIT_ATTEMPT_TOKEN and the task from
ORBIT_TASK_ID; the engine reached is ORBIT_NATS_URL (else the root's), as
ORBIT_NKEY: the engine gives it the agent identity's seed, which may send a
verb and nothing else. A call with a missing, stale or foreign token is refused (a tool
error the agent sees) and recorded under the task.

The engine starts it for a CLI attempt (the agent's --mcp-config, or
Codex's -c mcp_servers.orbit…); it is not meant to be run by hand.`,
		Args: exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			f := &verbForwarder{a: a, by: "orbit mcp"}
			defer f.close()
			return mcp.Serve(cmd.Context(), engine.Version, f)
		},
	}
}

// verbForwarder sends verbs to the engine's groundhog.verb endpoint, with
// the token and task of its environment. It connects on the first verb, so
// an agent can list the tools before the engine is reached.
type verbForwarder struct {
	a  *app
	by string

	mu sync.Mutex
	l  *events.Log
}

var _ mcp.Forwarder = (*verbForwarder)(nil)

// Forward implements mcp.Forwarder.
func (f *verbForwarder) Forward(ctx context.Context, verb string, input json.RawMessage) (string, bool, error) {
	l, err := f.log(ctx)
	if err != nil {
		return "", false, err
	}
	if verb == mcp.VerbTaskSummary {
		return f.summary(ctx, l, input)
	}
	var reply engine.VerbReply
	err = request(ctx, l, engine.EndpointGroundhogVerb, engine.VerbRequest{
		TaskID: os.Getenv(mcp.EnvTaskID), Token: os.Getenv(mcp.EnvToken), Verb: verb, Input: input, By: f.by,
	}, &reply)
	if err != nil {
		return "", false, err
	}
	return reply.Message, reply.Refused || reply.Error, nil
}

// summary sends a task_summary call to the engine's tasks.summary
// endpoint with the step's task and token.
func (f *verbForwarder) summary(ctx context.Context, l *events.Log, input json.RawMessage) (string, bool, error) {
	var in struct {
		Summary string `json:"summary"`
	}
	if err := json.Unmarshal(input, &in); err != nil {
		return "want {\"summary\": \"...\"}: " + err.Error(), true, nil
	}
	var reply engine.SummaryReply
	err := request(ctx, l, engine.EndpointTaskSummary, engine.SummaryRequest{
		TaskID: os.Getenv(mcp.EnvTaskID), Token: os.Getenv(mcp.EnvTaskToken), Summary: in.Summary}, &reply)
	if err != nil {
		return "", false, err
	}
	return reply.Message, reply.Refused, nil
}

func (f *verbForwarder) log(ctx context.Context) (*events.Log, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.l != nil {
		return f.l, nil
	}
	l, err := f.a.connectRunning(ctx)
	if err != nil {
		return nil, err
	}
	f.l = l
	return l, nil
}

func (f *verbForwarder) close() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.l != nil {
		f.l.Close()
	}
}

// connectRunning connects to the API of the engine of --nats-url
// (ORBIT_NATS_URL), else of the root's running engine, as --nkey
// (ORBIT_NKEY: the agent identity when an engine started this) else the
// root's client; unlike connect it never starts one: a verb is only ever
// sent for an attempt an engine has open. It looks nothing up in the log
// (events.DialAPI), which the agent identity may not read.
func (a *app) connectRunning(ctx context.Context) (*events.Log, error) {
	url := a.natsURL
	cfg := events.Config{Token: a.token, NKeySeedFile: a.nkey, TLS: a.tlsFiles(""), Name: "orbit-mcp"}
	if url == "" || (a.nkey == "" && a.token == "") {
		root, err := a.project()
		if err != nil && url == "" {
			return nil, err
		}
		if err == nil {
			if url == "" {
				info, ierr := engine.ReadInfo(root)
				if ierr != nil {
					return nil, &exitError{code: exitUnavailable, err: fmt.Errorf("no engine serves %s (%w): a verb is sent to the engine that runs the attempt (set %s)", root, ierr, mcp.EnvNATSURL)}
				}
				url = info.URL
			}
			client, cerr := a.clientConfig(root)
			if cerr != nil {
				return nil, cerr
			}
			cfg.NKeySeedFile, cfg.Token, cfg.TLS = client.NKeySeedFile, client.Token, client.TLS
		}
	}
	l, err := events.DialAPI(ctx, url, cfg)
	if errors.Is(err, events.ErrUnauthorized) || errors.Is(err, events.ErrTLS) {
		return nil, refused("the engine at "+url, err)
	}
	if err != nil {
		return nil, &exitError{code: exitUnavailable, err: fmt.Errorf("no Orbit engine at %s: %w", url, err)}
	}
	return l, nil
}

// groundhogVerbCommands are the verbs as plain commands, for agents
// without MCP.
func (a *app) groundhogVerbCommands() []*cobra.Command {
	var summary string
	var sideEffects []string
	success := &cobra.Command{
		Use:   "success --summary TEXT [--side-effect KIND:TARGET[:irreversible]]...",
		Short: "Declare the current checkpoint done (for a CLI agent's attempt)",
		Long: `Declare, from inside a CLI agent's attempt, that its checkpoint is done; the
engine then verifies the checkpoint's criteria. The same as the MCP tool
checkpoint_success. The attempt is the one ORBIT_ATTEMPT_TOKEN scopes (for
the task ORBIT_TASK_ID).

Exit status: 0 accepted; 1 refused (no, stale or foreign token) or the
input turned down, with the reason; 2 bad flags; 3 no engine.`,
		Args: exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			ses := []events.SideEffect{}
			for _, s := range sideEffects {
				se, err := events.ParseSideEffect(s)
				if err != nil {
					return usageErr("--side-effect %q: %v", s, err)
				}
				ses = append(ses, se)
			}
			return a.sendVerb(cmd.Context(), groundhog.VerbSuccess, map[string]any{"summary": summary, "side_effects": ses})
		},
	}
	success.Flags().StringVar(&summary, "summary", "", "what was done (required)")
	success.Flags().StringArrayVar(&sideEffects, "side-effect", nil, "a side effect, KIND:TARGET or KIND:TARGET:irreversible (repeatable)")

	var tried, happened, plan string
	failure := &cobra.Command{
		Use:   "failure --what-happened TEXT [--what-tried TEXT] [--next-attempt-plan TEXT]",
		Short: "Declare the current checkpoint failed (for a CLI agent's attempt)",
		Long: `Declare, from inside a CLI agent's attempt, that it could not complete its
checkpoint; the attempt is rewound and a later one starts with this report.
The same as the MCP tool checkpoint_failure, scoped by ORBIT_ATTEMPT_TOKEN.

Exit status: 0 accepted; 1 refused or turned down; 2 bad flags; 3 no engine.`,
		Args: exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.sendVerb(cmd.Context(), groundhog.VerbFailure, map[string]any{"what_tried": tried, "what_happened": happened, "next_attempt_plan": plan})
		},
	}
	failure.Flags().StringVar(&tried, "what-tried", "", "what the attempt tried")
	failure.Flags().StringVar(&happened, "what-happened", "", "what went wrong (required)")
	failure.Flags().StringVar(&plan, "next-attempt-plan", "", "what the next attempt should do")

	var kind, target string
	var irreversible bool
	sideEffect := &cobra.Command{
		Use:   "side-effect --kind KIND --target TARGET [--irreversible]",
		Short: "Declare a side effect of the current attempt (for a CLI agent's attempt)",
		Long: `Declare a side effect beyond the files the agent edits, as soon as it is
caused; KIND is one of file_write, file_delete, git_commit, db_mutation,
other. The same as the MCP tool side_effect, scoped by ORBIT_ATTEMPT_TOKEN.

Exit status: 0 recorded; 1 refused or turned down; 2 bad flags; 3 no engine.`,
		Args: exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.sendVerb(cmd.Context(), groundhog.VerbSideEffect, events.SideEffect{Kind: kind, Target: target, Reversible: !irreversible})
		},
	}
	sideEffect.Flags().StringVar(&kind, "kind", "", "file_write, file_delete, git_commit, db_mutation or other (required)")
	sideEffect.Flags().StringVar(&target, "target", "", "what was affected: a path, a table, a service (required)")
	sideEffect.Flags().BoolVar(&irreversible, "irreversible", false, "the side effect cannot be undone")
	return []*cobra.Command{success, failure, sideEffect}
}

// sendVerb sends one verb and prints the engine's answer: exit 1 when it
// was refused or turned down.
func (a *app) sendVerb(ctx context.Context, verb string, input any) error {
	raw, err := json.Marshal(input)
	if err != nil {
		return err
	}
	f := &verbForwarder{a: a, by: "orbit groundhog"}
	defer f.close()
	text, refused, err := f.Forward(ctx, verb, raw)
	if err != nil {
		return err
	}
	if refused {
		return &exitError{code: exitUnsuccess, err: errors.New(text)}
	}
	a.printf("%s\n", text)
	return nil
}
