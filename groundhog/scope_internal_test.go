package groundhog

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/internal/testkit"
)

// TestServeVerbsRecordsAsTheVerbTools: verbs delivered through a scope are
// answered by the attempt's own verb tools: a side effect is recorded at
// once, a bad input is turned down without a verdict, and the first
// accepted terminal verb sets the verdict, stops the session and ends the
// serving; once unregistered, the token is stale.
func TestServeVerbsRecordsAsTheVerbTools(t *testing.T) {
	t.Parallel()
	ctx := testkit.Context(t)
	l := testkit.StartLog(t, events.Config{})
	r := &runner{cfg: Config{Log: l, TaskID: "t1", RunID: "r1"}, st: newState()}
	a := &attempt{r: r, id: events.Attempt{Checkpoint: "one", Attempt: 1, Day: 1}}
	var issued []string
	reg := NewAttempts(func(token string) { issued = append(issued, token) })
	s, err := reg.Register("t1", a.id)
	require.NoError(t, err)
	require.Equal(t, []string{s.Token}, issued, "the token goes to the redactor as it is issued")

	stopped := make(chan struct{})
	served := make(chan struct{})
	go func() {
		defer close(served)
		a.serveVerbs(ctx, s, func() { close(stopped) })
	}()

	_, text, err := reg.Deliver(ctx, "t1", s.Token, VerbSideEffect, json.RawMessage(`{"kind":"db_mutation","target":"users","reversible":false}`))
	require.NoError(t, err)
	require.Equal(t, "Recorded.", text)
	evs, err := l.Read(ctx, events.FollowOptions{Filters: []string{events.EventSubject(events.AggregateTask, "t1", events.GroundhogSideEffect)}})
	require.NoError(t, err)
	require.Len(t, evs, 1)

	_, _, err = reg.Deliver(ctx, "t1", s.Token, VerbSuccess, json.RawMessage(`{"summary":"  "}`))
	require.ErrorContains(t, err, "summary must not be blank")
	_, _, err = reg.Deliver(ctx, "t1", s.Token, "orbit.groundhog.nap", json.RawMessage(`{}`))
	require.ErrorIs(t, err, ErrUnknownVerb)

	_, _, err = reg.Deliver(ctx, "t1", s.Token, VerbSuccess, json.RawMessage(`{"summary":"one.txt added"}`))
	require.NoError(t, err)
	<-stopped
	select {
	case <-served:
	case <-time.After(10 * time.Second):
		t.Fatal("serving went on after the terminal verb")
	}
	require.NotNil(t, a.verdict)
	require.Equal(t, VerbSuccess, a.verdict.verb)
	require.Equal(t, "one.txt added", a.verdict.summary)
	require.Equal(t, []events.SideEffect{{Kind: "db_mutation", Target: "users", Reversible: false}}, a.sideEffects)

	// A verb sent after the session stopped waits for no one: it is stale
	// once the attempt is unregistered.
	late := make(chan error, 1)
	go func() {
		_, _, err := reg.Deliver(ctx, "t1", s.Token, VerbFailure, json.RawMessage(`{"what_happened":"late"}`))
		late <- err
	}()
	time.Sleep(50 * time.Millisecond)
	reg.Unregister(s)
	require.ErrorIs(t, <-late, ErrTokenStale)
	_, _, err = reg.Deliver(ctx, "t1", s.Token, VerbFailure, json.RawMessage(`{"what_happened":"late"}`))
	require.ErrorIs(t, err, ErrTokenStale)
	_, _, err = reg.Deliver(ctx, "t2", s.Token, VerbFailure, json.RawMessage(`{"what_happened":"late"}`))
	require.ErrorIs(t, err, ErrTokenForeign)
	_, _, err = reg.Deliver(ctx, "t1", "", VerbFailure, nil)
	require.ErrorIs(t, err, ErrTokenMissing)
}

// TestServeVerbsStopsBeforeItAnswers: a terminal verb's caller hears the
// answer only once the session is closed, so whatever a CLI agent starts
// after it is refused; the answer tells the agent to end its turn.
func TestServeVerbsStopsBeforeItAnswers(t *testing.T) {
	t.Parallel()
	ctx := testkit.Context(t)
	r := &runner{cfg: Config{Log: testkit.StartLog(t, events.Config{}), TaskID: "t1", RunID: "r1"}, st: newState()}
	a := &attempt{r: r, id: events.Attempt{Checkpoint: "one", Attempt: 1, Day: 1}}
	reg := NewAttempts(nil)
	s, err := reg.Register("t1", a.id)
	require.NoError(t, err)
	stopping, release := make(chan struct{}), make(chan struct{})
	go a.serveVerbs(ctx, s, func() { close(stopping); <-release })
	answered := make(chan error, 1)
	var text string
	go func() {
		var err error
		_, text, err = reg.Deliver(ctx, "t1", s.Token, VerbSuccess, json.RawMessage(`{"summary":"done"}`))
		answered <- err
	}()
	<-stopping
	select {
	case <-answered:
		t.Fatal("the verb was answered before the agent was stopped")
	case <-time.After(200 * time.Millisecond):
	}
	close(release)
	require.NoError(t, <-answered)
	require.Contains(t, text, "The runtime will now verify")
	require.Contains(t, text, "end your turn")
}
