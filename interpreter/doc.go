// Package interpreter is the deterministic interpreter of Orbit's job
// grammar: given a run's job, its request and its history, it decides what
// the run does next — which step starts, retries, is skipped, waits for a
// signal or a child run, and how the run ends — and records each decision
// as an event with an id derived from what it decides. It is pure in the
// way Temporal's workflow code is: history in, decisions out. It never
// touches the log, the command queue, the leases bucket or the wall clock
// itself; it reads its run through a History and carries out its
// decisions through a Host (host.go), which package executor provides on
// the engine's log. The step commands it sends (StepCommand) are executed
// by the workers, which record the steps' outcomes in the same history.
//
// # Determinism rules
//
// Running the interpreter again on the same history makes the same
// decisions with the same ids, so that an engine that crashes, or loses its
// lease, is replaced by one that continues the run where it was:
//
//   - A decision depends only on the job, the run's input and pinned
//     environment, and the history: never on the wall clock, randomness,
//     map iteration order or the engine's settings of the moment, except
//     where the decision records what it read (a retry's not_before, a
//     gate's deadline, a child run's id, a budget's spend), and a replay
//     reads it back from the history instead of reading it again.
//   - Before doing anything for a step instance the interpreter looks it
//     up in the history by its derived id: what finished is returned as
//     recorded, what was dispatched is waited for, and only what never
//     happened is done now.
//   - Every step instance has a deterministic key (its id, prefixed by the
//     branch, item or iteration it is in), and every event of a step
//     attempt an id derived from the run, the key and the attempt
//     (StepEventID), so that recording a decision twice stores it once.
//   - Concurrent branches (parallel, fan_out) record their first events in
//     a fixed order (turn.go), so that the log reads the same however the
//     branches were scheduled.
//   - Which events a step writes is the run's step protocol
//     (Config.Protocol, from its run.requested), never the engine's: a
//     replay finds each decision where the run's own version put it, and
//     the step commands name the version (StepCommand.Protocol) so that
//     the workers write its events too.
//   - What a decision needs of the outside world it asks the Host, whose
//     answers are either recorded (NewID, Now) or about runs whose history
//     no longer changes (Read of a finished run).
//
// Retry planning (PlanRetry) follows the same rules on a finished run's
// history: asked twice, it answers the same.
//
// The flow of a run and the decisions about each construct are recorded
// in docs/architecture/runs.md.
package interpreter
