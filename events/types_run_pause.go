package events

// Pause and unpause of a run (orbit run pause|unpause, DESIGN §12): a
// paused run starts no new step until it is unpaused; the time it spent
// paused does not count against its wait deadlines.
const (
	RunPaused   = "run.paused"
	RunUnpaused = "run.unpaused"
)

func init() {
	register(RunPaused, AggregateRun, RunPausedData{})
	register(RunUnpaused, AggregateRun, RunUnpausedData{})
}

// RunPausedData is a pause: who asked, why, and the bulk operation it was
// part of (a selector of orbit run pause), if any.
type RunPausedData struct {
	Requester string `json:"requester,omitempty"`
	Reason    string `json:"reason,omitempty"`
	// Now: the run's running steps are stopped too (orbit run pause
	// --now), and run again once it is unpaused.
	Now    bool    `json:"now,omitempty"`
	Bulk   string  `json:"bulk,omitempty"`
	Signer *Signer `json:"signer,omitempty"`
}

// RunUnpausedData is the end of a pause.
type RunUnpausedData struct {
	Requester string  `json:"requester,omitempty"`
	Bulk      string  `json:"bulk,omitempty"`
	Signer    *Signer `json:"signer,omitempty"`
}
