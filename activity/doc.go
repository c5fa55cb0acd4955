// Package activity executes the steps of runs: the workers that consume
// step commands and the activities they run. The orchestration (package
// executor) decides and records each step's start; a worker carries it
// out and records its outcome. The package imports neither the
// orchestration nor anything above it, so actions registered from above
// (package shipping's) stand on it alone.
//
// The workers (worker.go, decision.go) consume step commands, check each
// against the decision recorded for it (step.started: a command without
// one is never run), hold the step's lease (package lease), run the
// activity and record its outcome: shell steps (shell.go), deterministic
// actions (actions.go, and those registered from above through
// registry.go), locks and workspace reservations (locks.go,
// workspace.go), agent steps (agent_step.go, agent_task.go,
// envelopes.go, agent_budget.go) and Groundhog steps (groundhog_step.go).
// What may change while they run is read from Settings at each step.
// ValidateJob says whether a job's activities can run here: the
// orchestration checks every request with it.
//
// Its design and the decisions it records are in
// docs/architecture/runs.md and, for agent steps,
// docs/architecture/agents.md.
package activity
