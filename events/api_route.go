package events

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
)

// Requests on a cluster. Every engine serves orbit.api.<endpoint> in one
// queue group, and the server hands a request to any member, a stopped or
// wedged engine included, until it drops that engine's connection (after
// its ping interval, minutes by default). So a request is not sent there:
// the requester first calls the roll (orbit.api.engines, answered by every
// serving engine, not a queue group), takes the first engine that answers,
// and sends the request to that engine's own subject
// (orbit.api.at.<engine>.<endpoint>). A request is then sent once, to an
// engine that has just answered, and no write is ever sent twice; the
// roll call is what is retried, with a short timeout per try.
const (
	rollCallSubject = APIRoot + ".engines"
	routePrefix     = APIRoot + ".at."
	// rollCallTry bounds one try of the roll call; the call is repeated
	// until the request's own deadline while no engine answers.
	rollCallTry = 2 * time.Second
	// rollCallQuiet ends Engines: the roll is complete once no engine has
	// answered for this long.
	rollCallQuiet = 250 * time.Millisecond
)

// EngineSubject is the subject on which the engine (service instance) id
// answers endpoint, and only that engine.
func EngineSubject(id, endpoint string) string { return routePrefix + id + "." + endpoint }

// rollAnswer is an engine's answer to the roll call.
type rollAnswer struct {
	ID string `json:"id"`
}

// apiRoute remembers the engine a requester's last request went to, so
// that a command of several requests calls the roll once.
type apiRoute struct {
	mu     sync.Mutex
	engine string
}

func (r *apiRoute) get() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.engine
}

func (r *apiRoute) set(id string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.engine = id
}

// forget drops id as the engine to ask, unless another request has picked
// another one since.
func (r *apiRoute) forget(id string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.engine == id {
		r.engine = ""
	}
}

// answerRollCall subscribes the service instance id to the roll call, and
// to its own (EngineSubject(id, "engines")), by which a requester checks
// that this one engine answers.
func (l *Log) answerRollCall(id string) ([]*nats.Subscription, error) {
	answer, err := json.Marshal(rollAnswer{ID: id})
	if err != nil {
		return nil, err
	}
	var subs []*nats.Subscription
	for _, subject := range []string{rollCallSubject, EngineSubject(id, "engines")} {
		sub, err := l.nc.Subscribe(subject, func(m *nats.Msg) {
			if _, err := l.checkRequest(m.Header, m.Reply); err == nil {
				_ = m.Respond(answer)
			}
		})
		if err != nil {
			for _, s := range subs {
				_ = s.Unsubscribe()
			}
			return nil, err
		}
		subs = append(subs, sub)
	}
	return subs, nil
}

// checkEngine asks engine id alone to answer the roll call, within
// rollCallTry: an engine that is stopped or gone is ErrUnavailable before
// any request is sent to it.
func (l *Log) checkEngine(ctx context.Context, id, endpoint string) error {
	tctx, cancel := context.WithTimeout(ctx, rollCallTry)
	defer cancel()
	_, err := l.refusals.request(tctx, l.nc, EngineSubject(id, "engines"), nil)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, ErrNotPermitted):
		return notPermitted(endpoint, EngineSubject(id, "engines"))
	case errors.Is(err, nats.ErrNoResponders):
		return fmt.Errorf("%w: %w: engine %s does not serve %s", ErrUnavailable, errEngineGone, id, endpoint)
	case errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("%w: engine %s did not answer the roll call for %s within %s", ErrUnavailable, id, endpoint, rollCallTry)
	}
	return fmt.Errorf("%w: %s: %v", ErrUnavailable, endpoint, err)
}

// pickEngine returns the engine to send a request to: the last one that
// answered, else the first to answer the roll call. It tries again every
// rollCallTry while no engine answers, until ctx ends; no engine serving
// at all (no responders) is ErrUnavailable at once.
func (l *Log) pickEngine(ctx context.Context, endpoint string) (string, error) {
	if id := l.route.get(); id != "" {
		return id, nil
	}
	for {
		tctx, cancel := context.WithTimeout(ctx, rollCallTry)
		msg, err := l.refusals.request(tctx, l.nc, rollCallSubject, nil)
		cancel()
		if errors.Is(err, ErrNotPermitted) {
			return "", notPermitted(endpoint, rollCallSubject)
		}
		if err == nil {
			var a rollAnswer
			if err := json.Unmarshal(msg.Data, &a); err != nil || a.ID == "" {
				return "", fmt.Errorf("%w: %s: a roll call answer that names no engine: %q", ErrUnavailable, endpoint, msg.Data)
			}
			l.route.set(a.ID)
			return a.ID, nil
		}
		switch {
		case errors.Is(err, nats.ErrNoResponders):
			return "", fmt.Errorf("%w: no engine answered %s", ErrUnavailable, endpoint)
		case ctx.Err() != nil:
			return "", fmt.Errorf("%w: no engine answered the roll call for %s", ErrUnavailable, endpoint)
		case !errors.Is(err, context.DeadlineExceeded):
			return "", fmt.Errorf("%w: %s: %v", ErrUnavailable, endpoint, err)
		}
	}
}

// Engines calls the roll and returns the ids of the engines that answer,
// sorted: the roll is complete once none has answered for a quarter of a
// second, or when ctx ends. No engine at all is ErrUnavailable.
func (l *Log) Engines(ctx context.Context) ([]string, error) {
	ctx, cancel := withDefaultTimeout(ctx)
	defer cancel()
	ctx, stop := l.refusals.watch(ctx, rollCallSubject)
	defer stop()
	inbox := l.nc.NewRespInbox()
	sub, err := l.nc.SubscribeSync(inbox)
	if err != nil {
		return nil, fmt.Errorf("%w: roll call: %v", ErrUnavailable, err)
	}
	defer func() { _ = sub.Unsubscribe() }()
	if err := l.nc.PublishRequest(rollCallSubject, inbox, nil); err != nil {
		return nil, fmt.Errorf("%w: roll call: %v", ErrUnavailable, err)
	}
	var ids []string
	wait := rollCallTry
	for {
		wctx, wcancel := context.WithTimeout(ctx, wait)
		msg, err := sub.NextMsgWithContext(wctx)
		wcancel()
		if err != nil {
			break
		}
		var a rollAnswer
		if json.Unmarshal(msg.Data, &a) == nil && a.ID != "" && !slices.Contains(ids, a.ID) {
			ids = append(ids, a.ID)
		}
		wait = rollCallQuiet
	}
	if len(ids) == 0 && refusedBy(ctx) {
		return nil, notPermitted("its roll call", rollCallSubject)
	}
	if len(ids) == 0 {
		return nil, fmt.Errorf("%w: no engine answered the roll call", ErrUnavailable)
	}
	slices.Sort(ids)
	return ids, nil
}
