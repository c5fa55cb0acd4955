// Package executor orchestrates runs on an engine: it takes run requests,
// admits runs across the engines that share a log, and interprets each
// admitted run (under its lease when engines share a NATS server). Deciding what a run does next is package
// interpreter's job, and executing a step is package activity's; this
// package gives the interpreter its host and turns its decisions into
// events and step commands for the workers.
//
// The orchestration (orchestrator.go) takes run requests off the command
// queue and records them (run.requested), admits runs within their job's
// max_active_runs (admission.go, slots.go: a global queue and shared slots
// when engines share a NATS server), on a shared server holds each
// running run's lease and takes over the runs of an engine that died
// (takeover.go, with package lease; an embedded store has one engine and
// no run leases), counts the live runs of each tree of child runs
// (descendants.go), and runs each admitted run's interpreter on its
// history (history.go) through its host (run_host.go). Around it are the
// requests a client makes of runs: cancel (cancel.go), retry (rerun.go),
// resume after a budget raise (resume.go), signals to waiting gates
// (signal.go), pauses of a run and of a job (pause.go, jobpause.go).
//
// Its design and the decisions it records are in
// docs/architecture/runs.md.
package executor
