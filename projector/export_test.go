package projector

import (
	"fmt"

	bolt "go.etcd.io/bbolt"
)

// ErrDamaged is wrapped by errors about a views file that cannot be read.
var ErrDamaged = errDamaged

// SetBeforeCommit installs a failpoint called with the batch's last sequence
// just before each batch commits; an error aborts the commit as a crash
// would.
func SetBeforeCommit(p *Projector, f func(seq uint64) error) {
	p.applyMu.Lock()
	defer p.applyMu.Unlock()
	p.beforeCommit = f
}

// SetReplayBuilt installs a hook Replay calls after building the fresh file
// and before pausing the apply loop.
func SetReplayBuilt(p *Projector, f func()) {
	p.applyMu.Lock()
	defer p.applyMu.Unlock()
	p.replayBuilt = f
}

// PutRaw writes value under key in a bucket of the live file, bypassing the
// folds: a way to corrupt the views. An empty value deletes the key.
func PutRaw(p *Projector, bucket, key, value string) error {
	p.applyMu.Lock()
	defer p.applyMu.Unlock()
	if p.db == nil {
		return ErrClosed
	}
	return p.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket([]byte(bucket))
		if b == nil {
			return fmt.Errorf("no bucket %s", bucket)
		}
		if value == "" {
			return b.Delete([]byte(key))
		}
		return b.Put([]byte(key), []byte(value))
	})
}
