package assets

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// claudeCodeTool is how one Orbit tool is granted to Claude Code: the
// built-in tools offered to the model (--tools) and the permission rules
// that let it use them (--allowedTools).
type claudeCodeTool struct {
	offer []string
	allow func(programs []string) []string
}

func rules(r ...string) func([]string) []string { return func([]string) []string { return r } }

// claudeCodeTools maps Orbit's tool names onto Claude Code's (2.1.331).
// IMPORTANT: this table is the one place the mapping is written; the load
// check (an Orbit tool with no equivalent), the adapter's command line and
// the names recorded in tool.called and tool.denied all read it.
//
// File rules are scoped to the working directory (`./**`, the workspace):
// a bare `Write` rule would let Claude Code write anywhere. Claude Code
// reads `Edit(…)` rules for every tool that changes files, Write included
// (a `Write(…)` rule with a path matches nothing). Claude Code 2.1.331 has
// no Glob, Grep or LS tool ("find files with find via Bash"), so fs.list is
// `ls` through Bash. fs.delete has no equivalent: Claude Code deletes only
// through its shell.
var claudeCodeTools = map[string]claudeCodeTool{
	"fs.read":  {offer: []string{"Read"}, allow: rules("Read(./**)")},
	"fs.write": {offer: []string{"Write"}, allow: rules("Edit(./**)")},
	"fs.edit":  {offer: []string{"Edit"}, allow: rules("Edit(./**)")},
	"fs.list":  {offer: []string{"Bash"}, allow: rules("Bash(ls:*)")},
	"shell.exec": {offer: []string{"Bash"}, allow: func(programs []string) []string {
		out := make([]string, 0, len(programs))
		for _, p := range programs {
			out = append(out, "Bash("+p+":*)")
		}
		return out
	}},
}

// claudeCodeDenied are the rules every claude_code invocation denies,
// whatever it allows: what Orbit's own fs tools never touch.
var claudeCodeDenied = []string{"Read(./.git/**)", "Read(./.orbit/**)", "Edit(./.git/**)", "Edit(./.orbit/**)"}

// ClaudeCodeGrantData is an agent_loop's tool allowlist in Claude Code's
// terms.
type ClaudeCodeGrantData struct {
	// Tools are the built-in tools offered to the model (--tools), sorted;
	// none offered means none.
	Tools []string
	// Allowed are the permission rules (--allowedTools), in the order of
	// the allowlist. Under --permission-mode dontAsk anything else is
	// denied without a prompt.
	Allowed []string
	// Denied are the permission rules that win over Allowed
	// (--disallowedTools): .git/ and .orbit/ are out of reach.
	Denied []string
	// Orbit names, for each offered Claude Code tool, the Orbit tool it
	// stands for (Bash: shell.exec when that is granted, else fs.list).
	Orbit map[string]string
}

// ClaudeCodeGrant maps an allowlist (with the programs shell.exec may run)
// onto Claude Code. An Orbit tool with no equivalent is an error that
// names it and the tools that have one.
func ClaudeCodeGrant(tools, programs []string) (ClaudeCodeGrantData, error) {
	g := ClaudeCodeGrantData{Orbit: map[string]string{}, Denied: slices.Clone(claudeCodeDenied)}
	for _, name := range tools {
		t, ok := claudeCodeTools[name]
		if !ok {
			return ClaudeCodeGrantData{}, fmt.Errorf("%q has no equivalent in Claude Code (tools that have one: %s)",
				name, strings.Join(slices.Sorted(maps.Keys(claudeCodeTools)), ", "))
		}
		for _, offered := range t.offer {
			if prev, ok := g.Orbit[offered]; !ok || prev != "shell.exec" {
				g.Orbit[offered] = name
			}
		}
		for _, r := range t.allow(programs) {
			if !slices.Contains(g.Allowed, r) {
				g.Allowed = append(g.Allowed, r)
			}
		}
	}
	g.Tools = slices.Sorted(maps.Keys(g.Orbit))
	return g, nil
}

// ClaudeCodeOrbitTool is the Orbit tool a Claude Code tool stands for in
// the table, granted or not (Bash: shell.exec), or "" when none does.
func ClaudeCodeOrbitTool(agentTool string) string {
	best := ""
	for _, name := range slices.Sorted(maps.Keys(claudeCodeTools)) {
		if slices.Contains(claudeCodeTools[name].offer, agentTool) && (best == "" || name == "shell.exec") {
			best = name
		}
	}
	return best
}
