package events

// GroundhogVerbRefused records a verb that reached the engine from outside
// it (orbit mcp, orbit groundhog success|failure|side-effect) and was
// refused: no attempt token, a stale one, or one the engine did not issue
// for the task. It is stored under the task the caller named.
const GroundhogVerbRefused = "groundhog.verb_refused"

func init() {
	register(GroundhogVerbRefused, AggregateTask, GroundhogVerbRefusedData{})
}

// GroundhogVerbRefusedData says which verb was refused and why.
//
// IMPORTANT: it never holds the token: a stale or foreign token may be
// another attempt's secret.
type GroundhogVerbRefusedData struct {
	Verb   string `json:"verb"`
	Reason string `json:"reason"`
	// By names the process that sent the verb (orbit mcp, orbit groundhog).
	By string `json:"by,omitempty"`
	// Signer signed the verb's request (nil: one recorded before it was).
	Signer *Signer `json:"signer,omitempty"`
}
