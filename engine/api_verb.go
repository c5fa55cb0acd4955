package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/groundhog"
)

// EndpointGroundhogVerb takes a Groundhog verb from a CLI agent's process
// (orbit mcp, orbit groundhog success|failure|side-effect) and hands it to
// the open attempt its token scopes; it answers a VerbReply.
const EndpointGroundhogVerb = "groundhog.verb"

// verbTimeout bounds how long a verb waits for its session to take it.
const verbTimeout = time.Minute

// VerbRequest is one verb sent from outside the engine.
type VerbRequest struct {
	// TaskID is the task the caller works on (ORBIT_TASK_ID).
	TaskID string `json:"task_id"`
	// Token is the attempt token the caller was given (ORBIT_ATTEMPT_TOKEN).
	Token string `json:"token"`
	// Verb is groundhog.VerbSuccess, VerbFailure or VerbSideEffect.
	Verb  string          `json:"verb"`
	Input json.RawMessage `json:"input"`
	// By names the sender, for the record.
	By string `json:"by,omitempty"`
}

// VerbReply answers a VerbRequest. A refused verb (Refused) or one whose
// input the session turned down (Error) is a tool error for the agent:
// Message says why.
type VerbReply struct {
	Refused bool   `json:"refused,omitempty"`
	Error   bool   `json:"error,omitempty"`
	Message string `json:"message"`
}

// Attempts is the engine's registry of open CLI attempts: a session that
// runs a CLI agent registers its attempt here and passes the token to the
// agent's environment.
func (e *Engine) Attempts() *groundhog.Attempts { return e.attempts }

// apiGroundhogVerb hands a verb to its attempt's session. A verb whose token
// does not scope an open attempt of the task is refused and recorded under
// the task (groundhog.verb_refused, without the token, coalesced: see
// refusals); one for a task the log does not know cannot be recorded and
// is an invalid request.
func (e *Engine) apiGroundhogVerb(ctx context.Context, raw json.RawMessage) (any, error) {
	var q VerbRequest
	if err := decode(raw, &q); err != nil {
		return nil, err
	}
	if strings.TrimSpace(q.TaskID) == "" {
		return nil, fmt.Errorf("%w: a verb needs the task id (ORBIT_TASK_ID)", events.ErrInvalidRequest)
	}
	last, err := e.log.LastMatching(ctx, []string{events.TaskFilter(q.TaskID)})
	if err != nil {
		return nil, err
	}
	if last == 0 {
		return nil, events.NotFoundf("no task %s", quote(q.TaskID))
	}
	ctx, cancel := context.WithTimeout(ctx, verbTimeout)
	defer cancel()
	_, text, err := e.attempts.Deliver(ctx, q.TaskID, q.Token, q.Verb, q.Input)
	var reason error
	switch {
	case err == nil:
		return VerbReply{Message: text}, nil
	case errors.Is(err, groundhog.ErrTokenMissing), errors.Is(err, groundhog.ErrTokenStale), errors.Is(err, groundhog.ErrTokenForeign):
		reason = err
	case errors.Is(err, groundhog.ErrUnknownVerb):
		return VerbReply{Error: true, Message: err.Error()}, nil
	case ctx.Err() != nil:
		return nil, fmt.Errorf("%w: the attempt's session did not take the verb within %s", events.ErrUnavailable, verbTimeout)
	default:
		// The session turned the input down: the agent may try again.
		return VerbReply{Error: true, Message: err.Error()}, nil
	}
	if err := e.refusals.refuse(ctx, q.TaskID, events.VerbRefusal{Verb: q.Verb, Reason: reason.Error(), By: q.By, Signer: events.RequestSigner(ctx)}); err != nil {
		return nil, err
	}
	return VerbReply{Refused: true, Message: "refused: " + reason.Error()}, nil
}
