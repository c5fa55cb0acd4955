package events

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
)

// Signer is the identity that signed a request to the engine, as the NATS
// server authenticated it: what a write records beside the requester the
// request names (DESIGN §2 "Access").
type Signer struct {
	// Identity is the project's identity (engine, client, reader, agent;
	// a key admitted with serve --nkey signs as a client).
	Identity Identity `json:"identity"`
	// Key is the nkey public key the request was signed with, when the
	// server says (an engine's own requests on a server whose engines
	// sign with a token do not).
	Key string `json:"key,omitempty"`
}

// String names the signer: identity and key.
func (s *Signer) String() string {
	if s == nil {
		return "unknown"
	}
	if s.Key == "" {
		return string(s.Identity)
	}
	return string(s.Identity) + " " + s.Key
}

type signerKey struct{}

// RequestSigner returns who signed the API request whose handler got ctx
// (see Log.Serve), nil when the server does not say: a server configured
// without accounts.
func RequestSigner(ctx context.Context) *Signer {
	s, _ := ctx.Value(signerKey{}).(*Signer)
	return s
}

// Replies of requests. A request that comes through an import from
// another account has a reply subject the server made (_R_.…), routed back
// to the caller's account alone; one from the engine's own account an
// inbox of its connection.
const (
	serviceReplyPrefix = "_R_."
	sharedInboxPrefix  = "_INBOX."
)

// ErrRefusedRequest is a request the engine does not act on: one that
// arrived as a JetStream delivery, or whose answer would go anywhere but
// the caller's own inbox.
var ErrRefusedRequest = errors.New("refused request")

// jetStreamHeaders are headers that only the server sets on what it
// delivers (a consumer's message, a direct get's answer, a status), or
// that a stored event carries: no request of a client has them.
var jetStreamHeaders = []string{"Nats-Stream", "Nats-Sequence", "Nats-Subject", "Nats-Time-Stamp",
	"Nats-Last-Sequence", "Nats-Num-Pending", nats.MsgIdHdr, MACHeader, CommandIDHeader, "Status"}

// checkRequest decides whether the engine acts on a request with headers h
// and reply subject reply, and returns who signed it. It refuses (wrapping
// ErrRefusedRequest) a request that arrived as a JetStream delivery (the
// headers of a stored message or of the server's answers, an ack reply)
// and one whose reply is not an inbox of the caller: so the engine neither
// acts for a consumer or a JetStream answer someone pointed at it, nor
// answers into the log, the command queue or someone else's inbox.
//
// IMPORTANT: a request through an import carries the identity the server
// authenticated (Nats-Request-Info, which the server writes over any the
// caller sent) and a _R_ reply that only the server makes; without an
// import the caller is in the engine's account, so it is an engine, when
// the server separates accounts (l.accounts), and unknown when it does not.
func (l *Log) checkRequest(h nats.Header, reply string) (*Signer, error) {
	if strings.HasPrefix(reply, "$JS.ACK.") {
		return nil, fmt.Errorf("%w: it arrived from a JetStream consumer (reply %s)", ErrRefusedRequest, reply)
	}
	for _, k := range jetStreamHeaders {
		if h.Get(k) != "" {
			return nil, fmt.Errorf("%w: it carries the JetStream header %s", ErrRefusedRequest, k)
		}
	}
	if strings.HasPrefix(reply, serviceReplyPrefix) {
		var ci requestInfo
		if err := json.Unmarshal([]byte(h.Get(server.ClientInfoHdr)), &ci); err != nil || ci.Account == "" {
			return nil, fmt.Errorf("%w: it came from another account without naming its signer", ErrRefusedRequest)
		}
		id := identityOfAccount(ci.Account)
		if id == "" || id == IdentityEngine {
			return nil, fmt.Errorf("%w: it came from account %q, which is none of the project's", ErrRefusedRequest, ci.Account)
		}
		return &Signer{Identity: id, Key: ci.User}, nil
	}
	if !isInbox(reply) {
		return nil, fmt.Errorf("%w: its answer would go to %q, which is not the caller's inbox", ErrRefusedRequest, reply)
	}
	if !l.accounts {
		return nil, nil
	}
	return &Signer{Identity: IdentityEngine, Key: l.selfKey}, nil
}

// requestInfo is what checkRequest reads of the Nats-Request-Info the
// server adds to a request through an import (server.ClientInfo).
type requestInfo struct {
	Account string `json:"acc"`
	User    string `json:"user"`
}

// isInbox reports whether reply is an inbox of a connection in the
// engine's account.
func isInbox(reply string) bool {
	for _, p := range []string{engineInboxPrefix + ".", inboxRoot + ".", sharedInboxPrefix} {
		if strings.HasPrefix(reply, p) {
			return true
		}
	}
	return false
}

// answerable reports whether a refused request may still be told why: its
// reply is a caller's inbox, not a subject someone pointed it at.
func answerable(reply string) bool {
	return strings.HasPrefix(reply, serviceReplyPrefix) || isInbox(reply)
}

// userInfo is the server's answer to $SYS.REQ.USER.INFO: the account and
// user of the connection that asks.
type userInfo struct {
	Data *struct {
		User    string `json:"user"`
		Account string `json:"account"`
	} `json:"data"`
}

// separatesAccounts asks the server which account this connection is in,
// and reports whether it is the engine's own (EngineAccount), as
// AccountsBlock configures a server, rather than one shared with every
// identity (a server configured without accounts, or one that says
// nothing).
func (l *Log) separatesAccounts() bool {
	msg, err := l.nc.Request("$SYS.REQ.USER.INFO", nil, 2*time.Second)
	if err != nil {
		return false
	}
	var info userInfo
	if json.Unmarshal(msg.Data, &info) != nil || info.Data == nil {
		return false
	}
	return info.Data.Account == EngineAccount
}
