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
// orbit.api.<endpoint>. The endpoints answer as soon as Serve returns.
// Every request runs in its own goroutine with a context that ends at Stop
// or after timeout.
func (l *Log) Serve(name, version string, timeout time.Duration, endpoints map[string]Handler) (Stopper, error) {
	svc, err := micro.AddService(l.nc, micro.Config{Name: name, Version: version, Description: "Orbit engine API"})
	if err != nil {
		return nil, fmt.Errorf("events: starting API service: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &apiService{svc: svc, cancel: cancel, log: l}
	for endpoint, h := range endpoints {
		err := svc.AddEndpoint(strings.ReplaceAll(endpoint, ".", "_"), micro.HandlerFunc(func(req micro.Request) {
			s.wg.Add(1)
			go func() {
				defer s.wg.Done()
				rctx, rcancel := context.WithTimeout(ctx, timeout)
				defer rcancel()
				s.answer(rctx, req, h)
			}()
		}), micro.WithEndpointSubject(APISubject(endpoint)))
		if err != nil {
			s.Stop()
			return nil, fmt.Errorf("events: API endpoint %s: %w", endpoint, err)
		}
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
		code := codeInternal
		for c, kind := range codeErrors {
			if errors.Is(err, kind) {
				code = c
			}
		}
		_ = req.Error(code, err.Error(), nil)
		return
	}
	_ = req.Respond(data)
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
	if l.replies == nil {
		replies, err := l.js.ObjectStore(ctx, RepliesStore)
		if err != nil {
			l.repliesMu.Unlock()
			return nil, fmt.Errorf("%w: reading a large answer (%s): object store %s: %v", ErrUnavailable, name, RepliesStore, err)
		}
		l.replies = replies
	}
	replies := l.replies
	l.repliesMu.Unlock()
	data, err := replies.GetBytes(ctx, name)
	if err != nil {
		return nil, fmt.Errorf("%w: reading a large answer (%s): %v", ErrUnavailable, name, err)
	}
	return data, nil
}

func (s *apiService) Stop() {
	_ = s.svc.Stop()
	s.cancel()
	s.wg.Wait()
}

// Request sends req to an API endpoint and decodes the answer into resp. An
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
	msg, err := l.nc.RequestWithContext(ctx, APISubject(endpoint), data)
	if err != nil {
		if errors.Is(err, nats.ErrNoResponders) || errors.Is(err, context.DeadlineExceeded) {
			return fmt.Errorf("%w: no engine answered %s", ErrUnavailable, endpoint)
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
