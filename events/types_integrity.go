package events

// IntegrityRejected records a message in the log or the command queue that
// failed verification by the log key: it was never delivered, applied or
// run. It is stored under the run the message's subject names (see
// SubjectRun).
const IntegrityRejected = "integrity.rejected"

// IntegrityRejectedData is the payload of integrity.rejected.
type IntegrityRejectedData struct {
	// Stream is ORBIT_EVENTS or ORBIT_COMMANDS.
	Stream  string `json:"stream"`
	Subject string `json:"subject"`
	Seq     uint64 `json:"seq"`
	// Reason is ReasonUnsigned or ReasonBadMAC.
	Reason string `json:"reason"`
}

func init() {
	register(IntegrityRejected, AggregateRun, IntegrityRejectedData{})
}
