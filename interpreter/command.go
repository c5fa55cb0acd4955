package interpreter

import (
	"encoding/json"
	"regexp"
	"strconv"

	"github.com/orbitrun/orbit/assets"
	"github.com/orbitrun/orbit/events"
)

// CmdStepPrefix begins the name of every step command, which the log keeps
// on a queue of its own (events.StepsStream).
const CmdStepPrefix = events.StepCommandPrefix

// RunRequest asks the orchestrator to run a job. The job travels whole and
// already resolved, so the run executes exactly what was validated.
type RunRequest struct {
	RunID     string     `json:"run_id"`
	Job       assets.Job `json:"job"`
	Input     any        `json:"input"` // merged: the job's default_input and the caller's input
	Requester string     `json:"requester,omitempty"`
	// Signer is who signed the API request that submitted the run; the
	// engine sets it (runs.submit, runs.retry), whatever a client sent.
	Signer *events.Signer  `json:"signer,omitempty"`
	Parent *events.RunLink `json:"parent,omitempty"`
	// ParentEvent is the event of the parent run that started this one (the
	// step.started of its job.invoke step): run.requested names it as parent.
	ParentEvent string `json:"parent_event,omitempty"`
	// Depth is the run's depth below the run someone requested (see
	// events.RunRequestedData.Depth).
	Depth int `json:"depth,omitempty"`
	// Root is the run at the top of its chain of job.invoke steps (see
	// events.RunRequestedData.Root); empty for a run someone requested.
	Root string `json:"root,omitempty"`
	// Env is what run.requested pins of the requester's environment (see
	// events.RunRequestedData.Env).
	Env map[string]string `json:"env,omitempty"`
	// RetryOf and From make the run a retry (see NewRetryRequest).
	RetryOf string `json:"retry_of,omitempty"`
	From    string `json:"from,omitempty"`
	// RetrySteps is what the retry does with each top-level step before
	// From (see events.RunRequestedData.RetrySteps).
	RetrySteps []events.RetryStep `json:"retry_steps,omitempty"`
	// Backend is what backend: auto resolved to in Job (see
	// events.RunRequestedData.Backend); empty means the engine's
	// runtime.backend.
	Backend string `json:"backend,omitempty"`
	// Traceparent is the caller's W3C traceparent (see
	// events.RunRequestedData.Traceparent).
	Traceparent string `json:"traceparent,omitempty"`
	// Routine is the routine and tick a scheduled run fires for (see
	// events.RunRequestedData.Routine).
	Routine *events.RoutineTick `json:"routine,omitempty"`
	// Bulk is the bulk operation that requested the run (see
	// events.RunRequestedData.Bulk).
	Bulk string `json:"bulk,omitempty"`
}

// StepCommand tells a worker to execute one attempt of one step instance.
// Everything in it is already rendered: workers need no scope.
type StepCommand struct {
	RunID     string              `json:"run_id"`
	Job       string              `json:"job"`
	StepKey   string              `json:"step_key"`
	Attempt   int                 `json:"attempt"`
	Activity  assets.ActivitySpec `json:"activity"`
	Input     any                 `json:"input"`
	Workspace string              `json:"workspace"`
	Timeout   int                 `json:"timeout_seconds"`
	StartedID string              `json:"started_id"`
	Session   string              `json:"session,omitempty"` // agent_loop: the named session to continue
	// ActivityName is the catalog name of a targeted activity (empty inline).
	ActivityName string `json:"activity_name,omitempty"`
	// Budget is the run's budget, which an agent step checks between turns.
	Budget *assets.Budget `json:"budget,omitempty"`
	// Traceparent is the attempt's span as a W3C traceparent: shell steps
	// and CLI agents get it as TRACEPARENT.
	Traceparent string `json:"traceparent,omitempty"`
	// Protocol is the step protocol of the command's run (see
	// events.StepProtocol; 0 in commands of runs under protocol 1 and in
	// those an engine sent before commands named it, which wrote
	// protocol 2's worker events): which events its worker writes.
	Protocol int `json:"protocol,omitempty"`
	// InputRef, from step protocol 4 on, stands for Input in the command
	// of a step whose input is its fan-out item's input as it is: Input is
	// then absent, and the worker reads the fan-out's recorded scope input
	// and sets the item on it (see events.ItemInput).
	InputRef *InputRef `json:"input_ref,omitempty"`
	// Resent marks a command the orchestrator sent again from the log: its
	// step.started was stored by an earlier engine and no command of it
	// was queued, so it may have been delivered and run before (a command
	// lost with its engine). Its worker treats it as redelivered.
	Resent bool `json:"resent,omitempty"`

	// input is the step's input as rendered, decoded (Input may hold its
	// encoding, or be absent for InputRef): what the interpreter gives a
	// pure action it decides itself. It is not sent.
	input any
}

// InputRef is a fan-out item's input by reference, as a step command
// carries it: the fan-out attempt's step.started, by its stream sequence
// (where a worker reads it at once) and its id (what the event must be),
// and the item.
type InputRef struct {
	Seq  uint64 `json:"seq"`
	ID   string `json:"id"`
	Item any    `json:"item"`
}

// StepCommandName is the command name of one step attempt. It is unique per
// attempt, so whether the command is still queued can be looked up.
func StepCommandName(typ, runID, key string, attempt int) string {
	return CmdStepPrefix + typ + "." + events.Token(runID) + "." + events.Token(key) + "." + strconv.Itoa(attempt)
}

// StepEventID is the derived id of a step-level decision event.
func StepEventID(typ, runID, key string, attempt int) string {
	return events.DecisionID(typ, runID, key, strconv.Itoa(attempt))
}

// envRef finds the variables a template reads: {{ env.NAME }}.
var envRef = regexp.MustCompile(`\{\{[^}]*?\benv\.([A-Za-z_][A-Za-z0-9_]*)`)

// PinEnv records in the request the values lookup has of the environment
// variables its job reads, except secret-named ones (which never enter the
// log: a worker reads them from its engine's environment).
func (r *RunRequest) PinEnv(lookup func(string) (string, bool)) error {
	data, err := json.Marshal(r.Job)
	if err != nil {
		return err
	}
	for _, m := range envRef.FindAllSubmatch(data, -1) {
		name := string(m[1])
		if events.SecretName(name) {
			continue
		}
		if v, ok := lookup(name); ok {
			if r.Env == nil {
				r.Env = map[string]string{}
			}
			r.Env[name] = v
		}
	}
	return nil
}
