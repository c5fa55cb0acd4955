package events

import "time"

// GroundhogVerbRefused records verbs that reached the engine from outside
// it (orbit mcp, orbit groundhog success|failure|side-effect) and were
// refused: no attempt token, a stale one, or one the engine did not issue
// for the task. It is stored under the task the caller named.
//
// Refusals are coalesced per task: the first is recorded as it comes
// (Count omitted), those that follow within the engine's window are
// counted and recorded as one event when it ends (Count > 0, Since), and
// the next window begins; so a caller that repeats a refused verb grows
// the log by one event a window, whatever its rate.
const GroundhogVerbRefused = "groundhog.verb_refused"

func init() {
	register(GroundhogVerbRefused, AggregateTask, GroundhogVerbRefusedData{})
}

// MaxVerbText bounds what a refusal records of a verb's name and of its
// sender's name, both chosen by the caller: the longest name Orbit gives
// either is a few dozen bytes.
const MaxVerbText = 64

// GroundhogVerbRefusedData says which verb was refused and why: the one
// refusal, or the first of those a coalesced event counts.
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
	// Count is how many refusals a coalesced event stands for, of which
	// the fields above are the first and Last the last; Since is when the
	// first came (the event's time is the window's end). Zero for a
	// refusal recorded as it came.
	Count int          `json:"count,omitempty"`
	Since time.Time    `json:"since,omitzero"`
	Last  *VerbRefusal `json:"last,omitempty"`
}

// VerbRefusal is one refused verb, as GroundhogVerbRefusedData.Last
// records the last of a window's.
type VerbRefusal struct {
	Verb   string  `json:"verb"`
	Reason string  `json:"reason"`
	By     string  `json:"by,omitempty"`
	Signer *Signer `json:"signer,omitempty"`
}
