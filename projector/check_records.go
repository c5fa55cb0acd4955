package projector

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"

	bolt "go.etcd.io/bbolt"
)

// A recordCheck checks each record of one of a view's buckets: that it
// decodes, that it is stored exactly as the view encodes it, and that it
// agrees with its key. check only reads its arguments, so records are
// checked in parallel.
type recordCheck struct {
	bucket []byte
	check  func(key, raw []byte) error
}

// records is the recordCheck of a bucket of T records, encoded as JSON.
// Decoding a record and encoding it again must give the bytes stored:
// views are encoded deterministically, so anything else (bytes after the
// JSON, a field name changed, bytes that are not UTF-8) is damage that
// decoding alone lets through. agrees, when not nil, checks the record
// against its key.
func records[T any](bucket []byte, agrees func(key []byte, v *T) error) recordCheck {
	return recordCheck{bucket: bucket, check: func(key, raw []byte) error {
		var v T
		if err := canonical(raw, &v); err != nil {
			return err
		}
		if agrees == nil {
			return nil
		}
		return agrees(key, &v)
	}}
}

// checkRecords checks that the applied cursor and the log's record parse and runs every view's
// record checks over its buckets. Views of a format this code does not
// write are not checked: the anchor check empties and rebuilds them.
func checkRecords(tx *bolt.Tx) error {
	if _, err := readLogRecord(tx); err != nil {
		return err
	}
	if formatChange(tx) != "" {
		if k, _ := tx.Cursor().First(); k != nil && tx.Bucket(bucketMeta) == nil {
			return errors.New("it has buckets but no meta bucket")
		}
		return nil
	}
	for _, v := range views {
		for _, c := range v.recordChecks() {
			b := tx.Bucket(c.bucket)
			if b == nil {
				return fmt.Errorf("view %s: bucket %s is missing", v.name(), c.bucket)
			}
			var all []storedRecord
			err := b.ForEach(func(k, raw []byte) error {
				if raw == nil {
					return fmt.Errorf("view %s: bucket %s: key %q is a nested bucket", v.name(), c.bucket, k)
				}
				all = append(all, storedRecord{view: v.name(), check: c, key: k, raw: raw})
				return nil
			})
			if err == nil {
				err = checkAll(all)
			}
			if err != nil {
				return err
			}
		}
	}
	return nil
}

// storedRecord is one record to check. key and raw point into the memory-mapped
// file: they are valid while the transaction that read them is open.
type storedRecord struct {
	view     string
	check    recordCheck
	key, raw []byte
}

// recordChunk is how many records a worker of checkAll takes at a time.
const recordChunk = 256

// checkAll checks the records of one bucket on every CPU, the caller's
// transaction open, and returns the problem of the first damaged one, in
// key order. Decoding is most of the cost of Open's check, and each record
// decodes alone.
func checkAll(all []storedRecord) error {
	var (
		next   atomic.Int64 // the first record no worker has taken
		failed atomic.Bool  // a worker found damage: the others stop
		wg     sync.WaitGroup
	)
	workers := min(runtime.GOMAXPROCS(0), len(all)/recordChunk+1)
	firstBad := make([]int, workers) // by worker: the index of its damaged record, or -1
	problems := make([]error, workers)
	for w := range workers {
		firstBad[w] = -1
		wg.Go(func() {
			// A fault reading the mapped file, or a panic, is damage:
			// guard recovers it in this goroutine.
			problems[w] = guard(func() error {
				for !failed.Load() {
					start := int(next.Add(recordChunk)) - recordChunk
					if start >= len(all) {
						return nil
					}
					for i := start; i < min(start+recordChunk, len(all)); i++ {
						r := all[i]
						if err := r.check.check(r.key, r.raw); err != nil {
							firstBad[w] = i
							failed.Store(true)
							return fmt.Errorf("view %s: bucket %s: key %q: %w", r.view, r.check.bucket, r.key, err)
						}
					}
				}
				return nil
			})
		})
	}
	wg.Wait()
	var first error
	at := len(all)
	for w, err := range problems {
		if err == nil {
			continue
		}
		if firstBad[w] < 0 { // a panic: no index
			return err
		}
		if firstBad[w] < at {
			first, at = err, firstBad[w]
		}
	}
	return first
}

// decodeStored decodes a record read from a view's bucket. A record that
// does not decode means the file is damaged: the error wraps errDamaged.
func decodeStored(raw []byte, v any) error {
	if err := unmarshal(raw, v); err != nil {
		return fmt.Errorf("%w: %w", errDamaged, err)
	}
	return nil
}

// canonical decodes raw into v and checks that v encodes to raw.
func canonical(raw []byte, v any) error {
	if err := unmarshal(raw, v); err != nil {
		return err
	}
	again, err := json.Marshal(v)
	if err != nil {
		return err
	}
	if !bytes.Equal(again, raw) {
		return errors.New("the record is not stored as the view encodes it")
	}
	return nil
}

// isDecimal reports whether raw is a sequence as the views store it.
func isDecimal(raw []byte) bool {
	n, err := strconv.ParseUint(string(raw), 10, 64)
	return err == nil && strconv.FormatUint(n, 10) == string(raw)
}

// mustMatch is the error of a record that disagrees with its key.
func mustMatch(what, got, want string) error {
	if got == want {
		return nil
	}
	return fmt.Errorf("the record's %s is %q, its key says %q", what, got, want)
}
