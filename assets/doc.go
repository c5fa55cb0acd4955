// Package assets reads and validates Orbit's assets: Activity, Job and
// Executor YAML files (schemaVersion 2, DESIGN §6), the project's
// .orbit/config.yaml, and the seeded assets built into the binary. It
// imports no other package of Orbit.
//
// Loading turns YAML into the normalized types of types.go: every default
// applied, every target resolved to a copy of its activity's spec, every
// agent_loop's backend resolved (auto becomes http or cli) and, on cli, its
// Executor copied in, every template and condition parsed and checked
// against the steps that can have run before it. What a loader returns is what the engine stores in the log
// and runs; a file that loads has nothing left for the engine to reject on
// its own grammar. Problems are reported all at once, each with its file,
// line and YAML path (see Error).
//
// Templates ({{ input.x }}, {{ steps.<id>.output }}, ...) and conditions
// (A == B && C != D) are parsed here and rendered by the executor with
// Template.Render, RenderValue and Condition.Eval against a Scope. Rendering
// depends only on the Scope, never on the clock or map order, so a replayed
// run renders the same text.
//
// A Catalog finds assets by name across its layers (env, workspace, seeded;
// first match wins).
package assets
