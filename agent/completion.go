package agent

import "errors"

// ErrNoCompletion is returned by RunCLI, with the outcome so far, when the
// CLI agent exited cleanly without its completion record: the result
// object of claude_json output, a turn.completed event of codex_jsonl.
// Whether that fails the step is the caller's choice
// (require_completion_envelope).
var ErrNoCompletion = errors.New("the agent ended without its completion record")

// Completed reports whether a session that returned without an error
// ended with its completion record: a final answer (stop_reason end_turn)
// or a terminal tool. A turn cut off at max_tokens is not one.
func (o *Outcome) Completed() bool {
	return o != nil && (o.StopReason == StopEndTurn || o.StopReason == StopTerminalTool)
}
