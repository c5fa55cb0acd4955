// Package lease holds the claims engines and workers take in the
// orbit_leases bucket: an engine's on a run, which only its holder
// interprets, and a worker's on a step attempt, which only its holder
// executes. A claim is taken and renewed by compare-and-set at the
// bucket's leader, expires a TTL after its last renewal unless renewed,
// and may be taken over once it has; a step lease fences the processes
// of the holder it takes over from (see Lease).
//
// The orchestration (package executor) holds run leases, the workers
// (package activity) step leases; both stand on this package, which
// stands on the log alone.
package lease
