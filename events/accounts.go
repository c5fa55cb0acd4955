package events

import (
	"fmt"
	"slices"
	"strings"
)

// Accounts (DESIGN §2 "Access"). The NATS server answers to whatever reply
// subject a publisher names, and a push consumer delivers wherever its
// creator said, on behalf of the account it lives in: within one account,
// permissions cannot stop a reader from making the server publish into the
// log or call the engine's API. So the engine has an account of its own,
// EngineAccount, holding the streams, the buckets, the object stores and
// the API; every other identity signs in to an account of its own, which
// imports from the engine's only a read view of the log and the blobs and
// the API endpoints it may call. A request made through an import carries
// a reply subject the server made (_R_.…), whose answer goes back to the
// requester's account and nowhere else, and the identity the server
// authenticated (Nats-Request-Info); a consumer is made for another
// account only through the engine's gate (consumer_gate.go), which makes
// pull consumers alone.
const (
	// EngineAccount is the engine's account: its connections are its only
	// users.
	EngineAccount = "ORBIT"
	// extraAccountPrefix starts the account of a key admitted with
	// serve --nkey: CLIENT_<public key>, one account per key, so that no
	// key shares an inbox with another.
	extraAccountPrefix = "CLIENT_"
)

// legacyAccount is the account of every user of a server configured
// without accounts (NATS' global account).
const legacyAccount = "$G"

// accountOf returns the account of the project's identity id.
func accountOf(id Identity) string {
	if id == IdentityEngine {
		return EngineAccount
	}
	return strings.ToUpper(string(id))
}

// identityOfAccount returns the identity whose account is account, "" for
// an account that is none of the project's.
func identityOfAccount(account string) Identity {
	if account == EngineAccount {
		return IdentityEngine
	}
	if strings.HasPrefix(account, extraAccountPrefix) {
		return IdentityClient
	}
	for _, id := range Identities {
		if accountOf(id) == account {
			return id
		}
	}
	return ""
}

// Response kinds of a service export.
const (
	oneAnswer     = ""       // the first answer ends the request
	manyAnswers   = "stream" // answers until the response threshold
	apiThreshold  = "6m"     // longer than any API handler runs (serveAPI)
	rollThreshold = "10s"    // longer than a roll call waits
)

// export is a subject the engine's account exports, and the identities
// that import it.
type export struct {
	subject string
	stream  bool   // a stream export (messages flow to the importers); else a service
	answers string // a service's response kind
	// threshold is how long the server routes a service's answers back
	// ("": the server's default, two minutes).
	threshold string
	// as is the subject the importers publish on, when it is not subject.
	as string
	// importers are the identities that import it; only is the subject
	// they import, when narrower than subject.
	importers []Identity
	only      map[Identity][]string
}

// gateSubject is where the engine takes other identities' requests to make
// a consumer of stream: the subject the importers' $JS.API.CONSUMER.CREATE
// requests are mapped to (see consumer_gate.go).
func gateSubject(stream string) string { return consumerGateRoot + "." + stream }

// exports lists what the engine's account exports and to whom: the log
// (as subjects to tail, and as streams to read through JetStream's read
// API), the blobs, the large API answers, and the API.
//
// IMPORTANT: the API is exported as four subject patterns that do not
// overlap (a subject matching two imports would reach the engines twice):
// the roll call, one token less than the endpoints; endpoints, two tokens
// (events.Serve refuses any other); and an engine's own roll call and
// endpoints under orbit.api.at.<engine>.
func exports() []export {
	readers := []Identity{IdentityClient, IdentityReader}
	clients := []Identity{IdentityClient}
	list := []export{{subject: EventsRoot + ".>", stream: true, importers: readers}}
	for _, s := range []string{EventsStream, "OBJ_" + BlobsStore, "OBJ_" + RepliesStore} {
		who := readers
		if s == "OBJ_"+RepliesStore {
			who = clients
		}
		list = append(list,
			export{subject: "$JS.API.STREAM.INFO." + s, importers: who},
			export{subject: "$JS.API.STREAM.MSG.GET." + s, importers: who},
			export{subject: "$JS.API.DIRECT.GET." + s, answers: manyAnswers, importers: who},
			export{subject: "$JS.API.DIRECT.GET." + s + ".>", answers: manyAnswers, importers: who},
		)
	}
	list = append(list,
		export{subject: gateSubject(EventsStream), as: "$JS.API.CONSUMER.CREATE." + EventsStream, importers: readers},
		export{subject: gateSubject(EventsStream) + ".>", as: "$JS.API.CONSUMER.CREATE." + EventsStream + ".>", importers: readers},
		export{subject: "$JS.API.CONSUMER.INFO." + EventsStream + ".*", importers: readers},
		export{subject: "$JS.API.CONSUMER.DELETE." + EventsStream + ".*", importers: readers},
		export{subject: "$JS.API.CONSUMER.MSG.NEXT." + EventsStream + ".*", answers: manyAnswers, importers: readers},
		// Imported so that the server does not answer the importers'
		// JetStream requests itself ("not enabled for account") beside
		// the engine's account; their permissions do not let them ask it.
		export{subject: "$JS.API.INFO", importers: readers},
	)
	verbs := make([]string, len(AgentEndpoints))
	for i, e := range AgentEndpoints {
		verbs[i] = EngineSubject("*", e)
	}
	callers := []Identity{IdentityClient, IdentityAgent}
	return append(list,
		export{subject: rollCallSubject, answers: manyAnswers, threshold: rollThreshold, importers: callers},
		export{subject: APIRoot + ".*.*", threshold: apiThreshold, importers: clients},
		export{subject: EngineSubject("*", "engines"), threshold: rollThreshold, importers: callers},
		export{subject: EngineSubject("*", "*.*"), threshold: apiThreshold, importers: callers,
			only: map[Identity][]string{IdentityAgent: verbs}},
	)
}

// account is one account of the server configuration: its users (nkey
// public keys and the identity whose permissions they get) and imports.
type account struct {
	name  string
	users []accountUser
	id    Identity // the identity whose imports it has
}

type accountUser struct {
	key  string
	id   Identity
	note string
}

// accounts lists the server's accounts for creds and the extra client
// keys (serve --nkey), the engine's first.
func accounts(creds *Creds, extra []string) []account {
	var out []account
	for _, id := range Identities {
		out = append(out, account{name: accountOf(id), id: id, users: []accountUser{{key: creds.Public[id], id: id, note: string(id)}}})
	}
	for _, key := range extra {
		out = append(out, account{name: extraAccountPrefix + key, id: IdentityClient,
			users: []accountUser{{key: key, id: IdentityClient, note: "serve --nkey"}}})
	}
	return out
}

// AccountsBlock returns the accounts block of a nats-server configuration
// that admits creds' identities, and the extra client keys, each in its
// account with its permissions and imports (see exports): what the
// embedded server runs with, and what orbit nats-config prints for an
// external server or cluster (without extra keys), so that both enforce
// the same model.
func AccountsBlock(creds *Creds, extra ...string) string {
	accs := accounts(creds, extra)
	importers := func(e export) []string {
		var names []string
		for _, a := range accs {
			if slices.Contains(e.importers, a.id) {
				names = append(names, fmt.Sprintf("%q", a.name))
			}
		}
		return names
	}
	var b strings.Builder
	b.WriteString("accounts {\n")
	for _, a := range accs {
		fmt.Fprintf(&b, "  %q: {\n", a.name)
		if a.id == IdentityEngine {
			b.WriteString("    jetstream: enabled\n")
		}
		b.WriteString("    users: [\n")
		for _, u := range a.users {
			fmt.Fprintf(&b, "      # %s\n      {\n        nkey: %s\n", u.note, u.key)
			if p := Permissions(u.id, u.key); p != nil {
				b.WriteString("        permissions: {\n")
				writeSubjects(&b, "publish", p.Publish)
				writeSubjects(&b, "subscribe", p.Subscribe)
				b.WriteString("        }\n")
			}
			b.WriteString("      }\n")
		}
		b.WriteString("    ]\n")
		if a.id == IdentityEngine {
			b.WriteString("    exports: [\n")
			for _, e := range exports() {
				kind := "service"
				if e.stream {
					kind = "stream"
				}
				fmt.Fprintf(&b, "      {%s: %q, accounts: [%s]", kind, e.subject, strings.Join(importers(e), ", "))
				if e.answers != oneAnswer {
					fmt.Fprintf(&b, ", response_type: %s", e.answers)
				}
				if e.threshold != "" {
					fmt.Fprintf(&b, ", response_threshold: %q", e.threshold)
				}
				b.WriteString("}\n")
			}
			b.WriteString("    ]\n")
		} else {
			b.WriteString("    imports: [\n")
			for _, e := range exports() {
				if !slices.Contains(e.importers, a.id) {
					continue
				}
				subjects, ok := e.only[a.id]
				if !ok {
					subjects = []string{e.subject}
				}
				for _, s := range subjects {
					if e.stream {
						fmt.Fprintf(&b, "      {stream: {account: %q, subject: %q}}\n", EngineAccount, s)
						continue
					}
					fmt.Fprintf(&b, "      {service: {account: %q, subject: %q}", EngineAccount, s)
					if e.as != "" {
						fmt.Fprintf(&b, ", to: %q", e.as)
					}
					b.WriteString(", share: true}\n")
				}
			}
			b.WriteString("    ]\n")
		}
		b.WriteString("  }\n")
	}
	b.WriteString("}\n")
	return b.String()
}
