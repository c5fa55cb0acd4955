package main

import (
	"os"

	"github.com/spf13/cobra"

	"github.com/orbitrun/orbit/agent"
)

// hookCommand is the hooks a CLI agent runs back into Orbit: hidden, since
// only the engine starts them.
func (a *app) hookCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:    "hook",
		Short:  "Hooks a CLI agent runs back into the engine (started by the engine)",
		Hidden: true,
	}
	cmd.AddCommand(&cobra.Command{
		Use:   "codex-pre-tool <endpoint>",
		Short: "Codex's PreToolUse hook: ask the engine whether a tool call may run",
		Long: `Read the call Codex is about to make (its PreToolUse hook input) on stdin,
hand it to the invocation's hook endpoint with the token in ORBIT_HOOK_TOKEN,
and print the engine's answer for Codex: nothing when the call may run, a
denial with its reason otherwise. When the engine cannot be asked, the call
is denied. The engine gives the hook to each Codex it starts; it is not
meant to be run by hand.`,
		Args: exactArgs(1, "the hook endpoint's URL"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return agent.CodexPreToolHook(cmd.Context(), args[0], os.Getenv(agent.EnvHookToken), a.stdin, a.stdout)
		},
	})
	return cmd
}
