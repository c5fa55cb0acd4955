package groundhog

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/orbitrun/orbit/events"
)

// Attempts holds the tokens of the open CLI attempts of one engine: a CLI
// agent's verbs reach the engine from another process (orbit mcp) and
// carry the token the attempt's session was given, which scopes them to
// that attempt.
//
// IMPORTANT: tokens live in memory only. An engine that restarts has
// closed every attempt it had open (recovery rewinds them), so a token
// from before the restart is refused as foreign.
//
// Attempts is safe for concurrent use; the zero value is not: use
// NewAttempts.
type Attempts struct {
	redact func(token string)

	mu     sync.Mutex
	open   map[string]*Scope
	closed map[string]string // token → task of closed attempts
}

// NewAttempts returns an empty registry. redact, when not nil, is given
// each token as it is issued, before anyone sees it: the engine passes
// its redactor's Add, so a token that an agent echoes never reaches the
// log.
func NewAttempts(redact func(token string)) *Attempts {
	return &Attempts{redact: redact, open: map[string]*Scope{}, closed: map[string]string{}}
}

// Scope is one registered attempt: the token its agent is given and the
// verbs that reach it.
type Scope struct {
	// Token is the secret the attempt's agent sends with each verb.
	Token   string
	TaskID  string
	Attempt events.Attempt

	calls chan *Call
	done  chan struct{}
}

// Calls delivers the verbs sent with the scope's token, one at a time; a
// caller waits until its Call is answered.
func (s *Scope) Calls() <-chan *Call { return s.calls }

// Call is one verb handed to the session that holds its scope. The
// session answers it exactly once with Answer.
type Call struct {
	// Verb is one of VerbSuccess, VerbFailure, VerbSideEffect.
	Verb  string
	Input json.RawMessage

	reply chan answer
}

type answer struct {
	text string
	err  error
}

// Answer gives the call's result back to the caller: the text the agent
// sees, or the error (bad input) it sees as a tool error.
func (c *Call) Answer(text string, err error) { c.reply <- answer{text: text, err: err} }

// Register issues a random token for an open attempt of taskID. The
// caller must Unregister the scope when the attempt's session ends.
func (as *Attempts) Register(taskID string, id events.Attempt) (*Scope, error) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return nil, fmt.Errorf("attempt token: %w", err)
	}
	s := &Scope{Token: hex.EncodeToString(b[:]), TaskID: taskID, Attempt: id, calls: make(chan *Call), done: make(chan struct{})}
	if as.redact != nil {
		as.redact(s.Token)
	}
	as.mu.Lock()
	defer as.mu.Unlock()
	as.open[s.Token] = s
	return s, nil
}

// Unregister closes a scope: its token is stale from now on, and a call
// still waiting on it is refused as such. It may be called more than once.
func (as *Attempts) Unregister(s *Scope) {
	as.mu.Lock()
	defer as.mu.Unlock()
	if as.open[s.Token] != s {
		return
	}
	delete(as.open, s.Token)
	as.closed[s.Token] = s.TaskID
	close(s.done)
}

// Deliver hands a verb sent with token for taskID to the session that
// holds the token's scope and returns the session's answer. It returns
// ErrTokenMissing, ErrTokenStale or ErrTokenForeign for a token that does
// not scope an open attempt of taskID, ErrUnknownVerb for a verb that is
// not builtin; the Scope is returned when the token was valid.
func (as *Attempts) Deliver(ctx context.Context, taskID, token, verb string, input json.RawMessage) (*Scope, string, error) {
	if token == "" {
		return nil, "", ErrTokenMissing
	}
	s, err := as.lookup(taskID, token)
	if err != nil {
		return nil, "", err
	}
	if verb != VerbSuccess && verb != VerbFailure && verb != VerbSideEffect {
		return s, "", fmt.Errorf("%w %q: want %s, %s or %s", ErrUnknownVerb, verb, VerbSuccess, VerbFailure, VerbSideEffect)
	}
	c := &Call{Verb: verb, Input: input, reply: make(chan answer, 1)}
	select {
	case s.calls <- c:
	case <-s.done:
		return s, "", ErrTokenStale
	case <-ctx.Done():
		return s, "", ctx.Err()
	}
	select {
	case a := <-c.reply:
		return s, a.text, a.err
	case <-ctx.Done():
		return s, "", ctx.Err()
	}
}

func (as *Attempts) lookup(taskID, token string) (*Scope, error) {
	as.mu.Lock()
	defer as.mu.Unlock()
	if s, ok := as.open[token]; ok && sameTask(s.TaskID, taskID) {
		return s, nil
	}
	if task, ok := as.closed[token]; ok && sameTask(task, taskID) {
		return nil, ErrTokenStale
	}
	return nil, ErrTokenForeign
}

func sameTask(a, b string) bool { return subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1 }

// closedSession is what a CLI agent is told with the answer of the
// terminal verb that closed its session.
const closedSession = "This attempt is now closed: end your turn with a one-line final message. Call no more tools and run no more commands; any you start is refused and stops the session."

// serveVerbs answers the verbs sent to scope as the attempt's own verb
// tools would (groundhog/verbs.go): a side effect is recorded at once, a
// terminal verb sets the attempt's verdict. After the first terminal verb
// it accepts, it calls stop (which closes the agent's session), answers the
// call once stop has returned, telling the agent to end its turn, and
// returns; it returns too when ctx ends
// or the scope is unregistered. The session reads the verdict only after
// serveVerbs has returned.
func (a *attempt) serveVerbs(ctx context.Context, s *Scope, stop func()) {
	tools := map[string]*verbTool{}
	for _, t := range a.verbs() {
		vt := t.(*verbTool)
		tools[vt.spec.Name] = vt
	}
	for {
		select {
		case c := <-s.Calls():
			vt := tools[c.Verb]
			text, err := vt.call(ctx, c.Input)
			if err == nil && vt.terminal {
				stop()
				c.Answer(text+" "+closedSession, nil)
				return
			}
			c.Answer(text, err)
		case <-s.done:
			return
		case <-ctx.Done():
			return
		}
	}
}
