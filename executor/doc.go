// Package executor runs jobs on an engine: the orchestration of runs
// across the engines that share a log, and the workers that execute their
// steps. Deciding what a run does next is package interpreter's job; this
// package gives the interpreter its host and carries out what it decides.
//
// The orchestration (orchestrator.go) takes run requests off the command
// queue and records them (run.requested), admits runs within their job's
// max_active_runs (admission.go, slots.go: a global queue and shared slots
// when engines share a NATS server), holds each running run's lease and
// takes over the runs of an engine that died (takeover.go, with package
// lease), counts the live runs of each tree of child runs (descendants.go), and
// runs each admitted run's interpreter on its history (history.go) through
// its host (run_host.go). Around it are the requests a client makes of
// runs: cancel (cancel.go), retry (rerun.go), resume after a budget raise
// (resume.go), signals to waiting gates (signal.go).
//
// The workers (worker.go, decision.go) consume step commands, check each
// against the decision recorded for it, hold the step's lease, run the
// activity and record its outcome: shell steps (shell.go), deterministic
// actions (actions.go, and those registered from above through
// registry.go), locks and workspace reservations (locks.go, workspace.go),
// agent steps (agent_step.go, agent_task.go, envelopes.go, agent_budget.go) and
// Groundhog steps (groundhog_step.go).
//
// Its design and the decisions it records are in
// docs/architecture/runs.md.
package executor
