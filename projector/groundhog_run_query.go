package projector

import (
	"bytes"
	"context"
	"fmt"
	"slices"

	bolt "go.etcd.io/bbolt"
)

// GroundhogRun returns the audit record of a task, its checkpoints' attempts
// in day order. A task that was never created is an error wrapping
// ErrNotFound; a task without Groundhog events has an empty record.
func (p *Projector) GroundhogRun(ctx context.Context, task string) (*GroundhogRun, error) {
	var r GroundhogRun
	err := p.read(ctx, func(tx *bolt.Tx) error {
		if err := getTaskRecord(tx, bucketGroundhogRuns, task, &r); err != nil {
			return err
		}
		return loadAttempts(tx, &r)
	})
	if err != nil {
		return nil, err
	}
	return &r, nil
}

// loadAttempts fills the Attempts of r's checkpoints from the attempts
// bucket. An attempt of a checkpoint the record does not list is an error:
// the fold lists every checkpoint an attempt names, so the file is damaged
// (and Replay repairs it).
func loadAttempts(tx *bolt.Tx, r *GroundhogRun) error {
	b := tx.Bucket(bucketGroundhogAttempts)
	if b == nil {
		return nil
	}
	prefix := []byte(r.TaskID + "\x00")
	c := b.Cursor()
	for k, raw := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, raw = c.Next() {
		var a AttemptRecord
		if err := unmarshal(raw, &a); err != nil {
			return fmt.Errorf("projector: attempt %q of task %s: %w", k[len(prefix):], r.TaskID, err)
		}
		i := slices.IndexFunc(r.Checkpoints, func(c CheckpointRecord) bool { return c.ID == a.Checkpoint })
		if i < 0 {
			return fmt.Errorf("projector: attempt %q of task %s: checkpoint %q is not in the task's record", k[len(prefix):], r.TaskID, a.Checkpoint)
		}
		r.Checkpoints[i].Attempts = append(r.Checkpoints[i].Attempts, a)
	}
	return nil
}
