package events

import "time"

// RunSignalled records a signal sent to a run (orbit run signal) for one
// step instance that waits for it: the engine's API appends it once it has
// checked that the step waits, and the interpreter finishes the step with
// its data (DESIGN §12).
const RunSignalled = "run.signalled"

func init() {
	register(RunSignalled, AggregateRun, RunSignalledData{})
}

// TypeWait is the activity type step.started records for a signal gate.
const TypeWait = "wait"

// WaitInfo is what a signal gate's step.started records: the signal it
// waits for and, when it has a timeout, the deadline computed when the
// wait began, so that a restart waits only what is left.
type WaitInfo struct {
	Signal         string     `json:"signal"`
	TimeoutSeconds int        `json:"timeout_seconds,omitempty"`
	Deadline       *time.Time `json:"deadline,omitempty"`
}

// RunSignalledData is a signal delivered to a waiting step: the step's
// attempt, the signal, its data (the step's output) and who sent it.
type RunSignalledData struct {
	Attempt   int    `json:"attempt"`
	Signal    string `json:"signal"`
	Data      any    `json:"data,omitempty"`
	Requester string `json:"requester,omitempty"`
	// Signer signed the signal (nil: one recorded before it was).
	Signer *Signer `json:"signer,omitempty"`
}
