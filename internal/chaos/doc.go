// Package chaos proves Orbit's promises by killing the real engine.
//
// Each trial starts `orbit serve` on a fresh project, submits a job, kills
// the engine with SIGKILL — at a failpoint the engine reaches
// (ORBIT_FAILPOINT) or at random moments — restarts it until the run
// finishes, and checks that nothing acknowledged was lost, that no step
// that finished ran again (and every re-run is on record), that the run's
// output is that of an uninterrupted run, that the views equal a replay of
// the log, for Groundhog that the repository ended on its branch, clean,
// with one commit per checkpoint, and for the shipping pipelines (local and
// pr, killed at each of their steps) that the task's one commit was merged,
// pushed and opened as a pull request once, never lost, and that the root
// checkout moved only by the merge.
//
// By default a quick subset runs (every failpoint once, three random
// trials); CHAOS=full runs every job at every failpoint that applies and
// five random trials per job (make chaos). CHAOS_SEED repeats a run's
// random choices (the plan, each trial's kills; not the engine's timing);
// CHAOS_PARALLEL bounds the trials that run at once (default 2). Trials
// are numbered, so one trial is run again with its seed and
// -run 'Chaos/(reference|kill)/(05|53)-' (its job's reference, then it).
package chaos
