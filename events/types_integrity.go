package events

// IntegrityRejected records a message in the log or the command queue that
// failed verification by the log key, or a step command that no recorded
// step.started stands behind: it was never delivered, applied or run. It is stored under the run the message's subject names (see
// SubjectRun).
const IntegrityRejected = "integrity.rejected"

// IntegrityRejectedData is the payload of integrity.rejected.
type IntegrityRejectedData struct {
	// Stream is ORBIT_EVENTS, ORBIT_COMMANDS or ORBIT_STEPS.
	Stream  string `json:"stream"`
	Subject string `json:"subject"`
	Seq     uint64 `json:"seq"`
	// Reason is ReasonUnsigned or ReasonBadMAC, or for a command that
	// verifies but has no decision behind it, ReasonNoDecision.
	Reason string `json:"reason"`
}

func init() {
	register(IntegrityRejected, AggregateRun, IntegrityRejectedData{})
}
