package events

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/micro"
)

// Handler answers one API request. The returned value is sent as JSON; an
// error is sent as an error reply whose kind (ErrNotFound,
// ErrInvalidRequest, ErrConflict, ErrStoreFull, or anything else) the requester gets
// back.
type Handler func(ctx context.Context, req json.RawMessage) (any, error)

// Error codes on the wire, and the errors they stand for.
const (
	codeNotFound = "404"
	codeInvalid  = "400"
	codeInternal = "500"
	codeFull     = "507"
	codeConflict = "409"
)

var codeErrors = map[string]error{
	codeNotFound: ErrNotFound,
	codeInvalid:  ErrInvalidRequest,
	codeFull:     ErrStoreFull,
	codeConflict: ErrConflict,
}

// replyError is an error reply: the server's message, of a known kind.
type replyError struct {
	kind error
	text string
}

func (e *replyError) Error() string { return e.text }
func (e *replyError) Unwrap() error { return e.kind }

// Serve registers endpoints as a NATS micro service named name: each
// endpoint (a dotted name such as "runs.get") answers on
// orbit.api.<endpoint>, in one queue group with every other instance, and
// on EngineSubject(id, endpoint), this instance's own; the instance answers
// the roll call (see Request) with id. id is the engine's id, or the
// service instance's when it is empty. The endpoints answer as soon as
// Serve returns. Every request runs in its own goroutine with a context
// that ends at Stop or after timeout, and that names who signed it
// (RequestSigner). A request that arrived as a JetStream delivery, or whose
// answer would go anywhere but its caller's inbox, is not handled (see
// checkRequest); an endpoint name is two dotted tokens.
func (l *Log) Serve(id, name, version string, timeout time.Duration, endpoints map[string]Handler) (Stopper, error) {
	svc, err := micro.AddService(l.nc, micro.Config{Name: name, Version: version, Description: "Orbit engine API"})
	if err != nil {
		return nil, fmt.Errorf("events: starting API service: %w", err)
	}
	if id == "" {
		id = svc.Info().ID
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &apiService{svc: svc, cancel: cancel, log: l}
	for endpoint, h := range endpoints {
		if strings.Count(endpoint, ".") != 1 {
			s.Stop()
			return nil, fmt.Errorf("events: API endpoint %q: want <group>.<name>, the subjects the other accounts import", endpoint)
		}
		handler := micro.HandlerFunc(func(req micro.Request) {
			signer, err := l.checkRequest(nats.Header(req.Headers()), req.Reply())
			if err != nil {
				l.log.Warn("API request refused", "subject", req.Subject(), "reply", req.Reply(), "err", err)
				if answerable(req.Reply()) {
					s.fail(req, fmt.Errorf("%w: %w", ErrInvalidRequest, err))
				}
				return
			}
			s.wg.Add(1)
			go func() {
				defer s.wg.Done()
				rctx, rcancel := context.WithTimeout(context.WithValue(ctx, signerKey{}, signer), timeout)
				defer rcancel()
				s.answer(rctx, req, h)
			}()
		})
		name := strings.ReplaceAll(endpoint, ".", "_")
		err := svc.AddEndpoint(name, handler, micro.WithEndpointSubject(APISubject(endpoint)))
		if err == nil {
			err = svc.AddEndpoint("at_"+name, handler, micro.WithEndpointSubject(EngineSubject(id, endpoint)))
		}
		if err != nil {
			s.Stop()
			return nil, fmt.Errorf("events: API endpoint %s: %w", endpoint, err)
		}
	}
	if s.roll, err = l.answerRollCall(id); err != nil {
		s.Stop()
		return nil, fmt.Errorf("events: answering the roll call: %w", err)
	}
	// The server has the endpoints' subscriptions once a round trip after
	// them is done: from here on, a request finds its responder.
	if err := l.nc.Flush(); err != nil {
		s.Stop()
		return nil, fmt.Errorf("events: starting API service: %w", err)
	}
	return s, nil
}

type apiService struct {
	log    *Log
	svc    micro.Service
	roll   []*nats.Subscription
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

func (s *apiService) answer(ctx context.Context, req micro.Request, h Handler) {
	resp, err := h(ctx, json.RawMessage(req.Data()))
	var data []byte
	if err == nil {
		data, err = json.Marshal(resp)
	}
	if err == nil && len(data) > s.log.maxReply() {
		var name string
		if name, err = s.log.putReply(ctx, data); err == nil {
			_ = req.Respond(nil, micro.WithHeaders(micro.Headers{replyObjectHeader: []string{name}}))
			return
		}
	}
	if err != nil {
		s.fail(req, err)
		return
	}
	_ = req.Respond(data)
}

// codeOrder is the order in which fail matches an error's kinds, so an
// error that wraps two of them always gets the same code.
var codeOrder = []string{codeNotFound, codeInvalid, codeFull, codeConflict}

// fail sends an error reply in micro's format. It publishes the reply
// itself instead of calling req.Error: the service reads what req.Error
// records as soon as the handler returns, and answer runs after that, in
// a goroutine of its own.
func (s *apiService) fail(req micro.Request, err error) {
	code := codeInternal
	for _, c := range codeOrder {
		if errors.Is(err, codeErrors[c]) {
			code = c
			break
		}
	}
	msg := &nats.Msg{Subject: req.Reply(), Header: nats.Header{}}
	msg.Header.Set(micro.ErrorHeader, err.Error())
	msg.Header.Set(micro.ErrorCodeHeader, code)
	_ = s.log.nc.PublishMsg(msg)
}

// Answers too large for one message. The server's max_payload bounds a
// message, headers included; an answer over it is stored in orbit_replies
// and the reply names the object instead.
const (
	replyObjectHeader = "Orbit-Reply-Object"
	replyHeadroom     = 8 << 10
	repliesTTL        = 10 * time.Minute
)

// maxReply is the largest answer sent as a message.
func (l *Log) maxReply() int { return int(l.nc.MaxPayload()) - replyHeadroom }

func (l *Log) putReply(ctx context.Context, data []byte) (string, error) {
	name := NewID()
	if _, err := l.replies.PutBytes(ctx, name, data); err != nil {
		return "", publishError("reply "+name, err)
	}
	return name, nil
}

// takeReply fetches a stored answer. It is not deleted: a client may not
// write to the object store, and the answer expires after repliesTTL.
func (l *Log) takeReply(ctx context.Context, name string) ([]byte, error) {
	l.repliesMu.Lock()
	var err error
	if l.replies == nil {
		l.replies, err = l.js.ObjectStore(ctx, RepliesStore)
	}
	if err == nil && l.repliesStream == nil {
		l.repliesStream, err = l.js.Stream(ctx, "OBJ_"+RepliesStore)
	}
	replies, stream := l.replies, l.repliesStream
	l.repliesMu.Unlock()
	if err != nil {
		return nil, fmt.Errorf("%w: reading a large answer (%s): object store %s: %v", ErrUnavailable, name, RepliesStore, err)
	}
	data, err := readObject(ctx, l, replies, stream, RepliesStore, name)
	if err != nil {
		return nil, fmt.Errorf("%w: reading a large answer (%s): %v", ErrUnavailable, name, err)
	}
	return data, nil
}

func (s *apiService) Stop() {
	for _, sub := range s.roll {
		_ = sub.Unsubscribe()
	}
	_ = s.svc.Stop()
	s.cancel()
	s.wg.Wait()
}

// Request sends req to an API endpoint and decodes the answer into resp. It
// goes to one engine that answers the roll call (the one the last request
// went to, while it answers), so that a stopped engine in the queue group
// cannot swallow it, and it is sent once: a write is never repeated. An
// error reply comes back with the server's message, wrapping ErrNotFound,
// ErrInvalidRequest, ErrConflict or ErrStoreFull when it is of that kind and
// ErrEngineFailed when it is of none; no answer at all is ErrUnavailable.
func (l *Log) Request(ctx context.Context, endpoint string, req, resp any) error {
	data, err := json.Marshal(req)
	if err != nil {
		return fmt.Errorf("events: encoding %s request: %w", endpoint, err)
	}
	ctx, cancel := withDefaultTimeout(ctx)
	defer cancel()
	for try := 0; ; try++ {
		id, err := l.pickEngine(ctx, endpoint)
		if err != nil {
			return err
		}
		err = l.requestAt(ctx, id, endpoint, data, resp)
		if errors.Is(err, ErrUnavailable) {
			l.route.forget(id)
		}
		// No responders: the engine left between its answer to the roll
		// call and the request, which no one received. Ask another.
		if !errors.Is(err, errEngineGone) || try == 2 {
			return err
		}
	}
}

// RequestEngine is Request to the engine (service instance) id only: for
// questions about one engine, such as whether its views verify. An engine
// that does not answer its own roll call within two seconds is
// ErrUnavailable, and is not sent the request.
func (l *Log) RequestEngine(ctx context.Context, id, endpoint string, req, resp any) error {
	data, err := json.Marshal(req)
	if err != nil {
		return fmt.Errorf("events: encoding %s request: %w", endpoint, err)
	}
	ctx, cancel := withDefaultTimeout(ctx)
	defer cancel()
	if err := l.checkEngine(ctx, id, endpoint); err != nil {
		return err
	}
	return l.requestAt(ctx, id, endpoint, data, resp)
}

// errEngineGone is the ErrUnavailable of a request that no engine received.
var errEngineGone = errors.New("no such engine")

func (l *Log) requestAt(ctx context.Context, id, endpoint string, data []byte, resp any) error {
	msg, err := l.refusals.request(ctx, l.nc, EngineSubject(id, endpoint), data)
	if err != nil {
		switch {
		case errors.Is(err, ErrNotPermitted):
			return notPermitted(endpoint, EngineSubject(id, endpoint))
		case errors.Is(err, nats.ErrNoResponders):
			return fmt.Errorf("%w: %w: engine %s does not answer %s", ErrUnavailable, errEngineGone, id, endpoint)
		case errors.Is(err, context.DeadlineExceeded):
			return fmt.Errorf("%w: engine %s did not answer %s", ErrUnavailable, id, endpoint)
		case errors.Is(err, nats.ErrMaxPayload):
			// The request itself, not the engine: sending it again cannot help.
			return fmt.Errorf("%w: the %s request is %d bytes, over the server's largest message (max_payload) of %d bytes",
				ErrInvalidRequest, endpoint, len(data), l.nc.MaxPayload())
		}
		return fmt.Errorf("%w: %s: %v", ErrUnavailable, endpoint, err)
	}
	if code := msg.Header.Get(micro.ErrorCodeHeader); code != "" {
		text := msg.Header.Get(micro.ErrorHeader)
		if kind, ok := codeErrors[code]; ok {
			return &replyError{kind: kind, text: text}
		}
		return &replyError{kind: ErrEngineFailed, text: text}
	}
	if resp == nil {
		return nil
	}
	answer := msg.Data
	if name := msg.Header.Get(replyObjectHeader); name != "" {
		if answer, err = l.takeReply(ctx, name); err != nil {
			return err
		}
	}
	if err := json.Unmarshal(answer, resp); err != nil {
		return fmt.Errorf("events: decoding %s answer: %w", endpoint, err)
	}
	return nil
}
