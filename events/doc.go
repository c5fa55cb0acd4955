// Package events is Orbit's event log and everything that travels on NATS:
// the one place the engine's state is kept. Every other package records
// what happens as events here and reads it back from here.
//
// It holds the Log (Open starts an embedded JetStream server or connects
// to an external one and provisions the streams and buckets; Dial binds a
// client to what an engine provisioned), the envelope of an event and the
// registry of event types with their payloads (types_*.go), the subjects
// and the derived ids of decisions (DecisionID: a decision stored twice is
// stored once), Append and AppendAsync with group commit, Follow and Read,
// the command queue the orchestrator and the workers consume (Send,
// Consume, Pending), blobs for large payloads, the KV buckets of leases
// and locks, the redactor that keeps secrets out of the log, the signed
// log (tamper evidence), the identities and permissions of a cluster's
// accounts, and the request/reply API the CLI and the console use (Serve,
// Request). The log is never rewritten: ORBIT_EVENTS denies deleting a
// message, and only retention takes finished work out, by purging its
// subjects after a signed log.removed that names what goes (removal.go;
// a stream made before retention keeps denying purges).
//
// Its design and the decisions it records are in
// docs/architecture/log.md.
package events
