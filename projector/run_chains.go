package projector

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"log/slog"

	bolt "go.etcd.io/bbolt"

	"github.com/orbitrun/orbit/events"
)

// RunChain is a running hash over one run's history as the projector
// applied it: SHA-256 of the previous hash, then the sequence, id and type
// of each event of the run, in the order applied. A rebuild from a log whose
// run events were removed, reordered or moved to other sequences — signed
// events copied into a new stream, which their MACs alone do not reveal —
// gives a different chain, and `replay --verify` reports the run.
type RunChain struct {
	RunID   string `json:"run_id"`
	Events  int    `json:"events"`
	LastSeq uint64 `json:"last_seq"`
	Hash    string `json:"hash"` // hex
}

// bucketRunChains holds run id → RunChain.
var bucketRunChains = []byte("run_chains")

// runChainsView folds every event of a run, whatever its type, into the
// run's chain.
type runChainsView struct{}

func (runChainsView) name() string { return "run_chains" }

// version history: 1 first format.
func (runChainsView) version() int      { return 1 }
func (runChainsView) buckets() [][]byte { return [][]byte{bucketRunChains} }

func (runChainsView) begin(tx *bolt.Tx, _ *slog.Logger) (viewBatch, error) {
	name := func(id string) string { return "run chain of " + id }
	return &runChainsBatch{chains: newBatchCache[RunChain](tx.Bucket(bucketRunChains), name)}, nil
}

func (runChainsView) recordChecks() []recordCheck {
	return []recordCheck{records(bucketRunChains, func(k []byte, v *RunChain) error {
		return mustMatch("run_id", v.RunID, string(k))
	})}
}

type runChainsBatch struct {
	chains *batchCache[RunChain]
}

// fold chains every run event, including those whose data does not decode:
// the chain is over the history, not over what the other views make of it.
func (b *runChainsBatch) fold(ev decodedEvent) error {
	if info, ok := events.Lookup(ev.Type); !ok || info.Aggregate != events.AggregateRun || ev.RunID == "" {
		return nil
	}
	e, err := b.chains.get(ev.RunID)
	if err != nil {
		return err
	}
	if e.rec == nil {
		e.rec = &RunChain{RunID: ev.RunID}
	}
	e.rec.Hash = chainHash(e.rec.Hash, ev.Event)
	e.rec.Events++
	e.rec.LastSeq = ev.Seq
	e.dirty = true
	return nil
}

func (b *runChainsBatch) flush() error { return b.chains.flush() }

// chainHash is the next link of a run chain.
//
// IMPORTANT: stored in the views and compared by replay --verify; a change
// here is a new version of the view.
func chainHash(prev string, ev events.Event) string {
	// One buffer hashed at once, for every event of a rebuild: the same
	// bytes as writing each part to a hash.Hash, without its allocations.
	var stack [256]byte
	buf := append(stack[:0], prev...)
	buf = binary.BigEndian.AppendUint64(buf, ev.Seq)
	buf = append(buf, ev.ID...)
	buf = append(buf, 0)
	buf = append(buf, ev.Type...)
	sum := sha256.Sum256(buf)
	var out [2 * sha256.Size]byte
	hex.Encode(out[:], sum[:])
	return string(out[:])
}
