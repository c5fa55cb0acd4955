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

// Codex's sandbox modes (codex exec --sandbox).
const (
	CodexReadOnly       = "read-only"
	CodexWorkspaceWrite = "workspace-write"
)

// codexTools maps Orbit's tool names onto what Codex (0.169) can restrict:
// the sandbox its commands and patches run in. IMPORTANT: this table is the
// one place the mapping is written; the load check, the adapter's
// --sandbox and the names recorded in tool.called and tool.denied all read
// it.
//
// Codex has no per-tool allowlist: it reads, lists and runs everything
// through one shell, and writes through that shell or apply_patch. What it
// can restrict is where they write: read-only (the default) or
// workspace-write (the workspace and the temporary directory, no network).
// So fs.read and fs.list need nothing beyond read-only, and fs.write,
// fs.edit and fs.delete are workspace-write. shell.exec has no equivalent:
// Codex's shell runs any program its sandbox lets it, so an
// allowed_programs list cannot be enforced; a PATH of wrappers would not
// enforce it either (a command names /bin/rm as easily as rm), and Orbit
// does not claim what it does not enforce.
var codexTools = map[string]string{
	"fs.read":   CodexReadOnly,
	"fs.list":   CodexReadOnly,
	"fs.write":  CodexWorkspaceWrite,
	"fs.edit":   CodexWorkspaceWrite,
	"fs.delete": CodexWorkspaceWrite,
}

// Codex's item types that are tool calls, and the Orbit tool each is
// recorded as: a command is shell.exec (what it is, whatever the sandbox
// let it do); a change to a file is the fs tool of its kind.
var codexItemTools = map[string]string{
	"command_execution":  "shell.exec",
	"file_change:add":    "fs.write",
	"file_change:update": "fs.edit",
	"file_change:delete": "fs.delete",
}

// CodexGrantData is an agent_loop's tool allowlist in Codex's terms.
type CodexGrantData struct {
	// Sandbox is the --sandbox mode: CodexWorkspaceWrite when the allowlist
	// writes, else CodexReadOnly.
	Sandbox string
	// Writes reports whether the allowlist lets the agent change files.
	Writes bool
}

// CodexGrant maps an allowlist onto Codex's sandbox. An Orbit tool with no
// equivalent is an error that names it and the tools that have one.
func CodexGrant(tools []string) (CodexGrantData, error) {
	g := CodexGrantData{Sandbox: CodexReadOnly}
	for _, name := range tools {
		mode, ok := codexTools[name]
		if !ok {
			why := ""
			if name == "shell.exec" {
				why = ": Codex's shell runs any program its sandbox allows, so allowed_programs cannot be enforced"
			}
			return CodexGrantData{}, fmt.Errorf("%q has no equivalent in Codex%s (tools that have one: %s)",
				name, why, strings.Join(slices.Sorted(maps.Keys(codexTools)), ", "))
		}
		if mode == CodexWorkspaceWrite {
			g.Sandbox, g.Writes = CodexWorkspaceWrite, true
		}
	}
	return g, nil
}

// CodexOrbitTool is the Orbit tool a Codex item stands for: its item type,
// and for a file_change the kind of change (add, update, delete). It is ""
// for an item that is no tool call Orbit grants (an MCP call, a web
// search).
func CodexOrbitTool(itemType, kind string) string {
	if itemType == "file_change" {
		itemType += ":" + kind
	}
	return codexItemTools[itemType]
}
