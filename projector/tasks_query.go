package projector

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"

	bolt "go.etcd.io/bbolt"
)

// Task returns a task. A task the views do not hold is an error wrapping
// ErrNotFound.
func (p *Projector) Task(ctx context.Context, id string) (*TaskView, error) {
	var v TaskView
	err := p.read(ctx, func(tx *bolt.Tx) error {
		return getTaskRecord(tx, bucketTasks, id, &v)
	})
	if err != nil {
		return nil, err
	}
	return &v, nil
}

// Tasks returns every task in natural order of their ids: T-2 before T-10.
func (p *Projector) Tasks(ctx context.Context) ([]TaskView, error) {
	var tasks []TaskView
	err := p.read(ctx, func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketTasks)
		if b == nil {
			return nil
		}
		return b.ForEach(func(k, raw []byte) error {
			var v TaskView
			if err := unmarshal(raw, &v); err != nil {
				return fmt.Errorf("projector: task %s: %w", k, err)
			}
			tasks = append(tasks, v)
			return nil
		})
	})
	if err != nil {
		return nil, err
	}
	slices.SortFunc(tasks, func(a, b TaskView) int { return compareTaskIDs(a.ID, b.ID) })
	return tasks, nil
}

// getTaskRecord decodes the record of task id in one of the per-task
// buckets into v. A task without a record is an error wrapping ErrNotFound.
func getTaskRecord(tx *bolt.Tx, bucket []byte, id string, v any) error {
	var raw []byte
	if b := tx.Bucket(bucket); b != nil {
		raw = b.Get([]byte(id))
	}
	if raw == nil {
		return notFound("no task %s", id)
	}
	if err := unmarshal(raw, v); err != nil {
		return fmt.Errorf("projector: %s of task %s: %w", bucket, id, err)
	}
	return nil
}

// compareTaskIDs orders task ids naturally: split into runs of digits and
// runs of other bytes, compared run by run, digits as numbers. So "T-2"
// sorts before "T-10", as the numbers of two ids T-<n> say, and ids of any
// other shape still get a total order (which comparing numbers when both
// ids parse and strings otherwise would not be: "T-10" < "T-1x" < "T-2").
// Ids that only differ in leading zeros ("T-02", "T-2") are ordered as
// strings.
func compareTaskIDs(a, b string) int {
	x, y := a, b
	for x != "" && y != "" {
		var xr, yr string
		xr, x = nextRun(x)
		yr, y = nextRun(y)
		if c := compareRuns(xr, yr); c != 0 {
			return c
		}
	}
	return cmp.Or(cmp.Compare(len(x), len(y)), strings.Compare(a, b))
}

// nextRun cuts s's leading run of digits or of non-digits.
func nextRun(s string) (run, rest string) {
	digit := isDigit(s[0])
	i := 1
	for i < len(s) && isDigit(s[i]) == digit {
		i++
	}
	return s[:i], s[i:]
}

// compareRuns compares two runs: as numbers when both are digits, else as
// strings. A digit run and another run differ in their first byte, and a
// non-digit byte is either below or above every digit, so this is a total
// order.
func compareRuns(a, b string) int {
	if !isDigit(a[0]) || !isDigit(b[0]) {
		return strings.Compare(a, b)
	}
	a, b = strings.TrimLeft(a, "0"), strings.TrimLeft(b, "0")
	return cmp.Or(cmp.Compare(len(a), len(b)), strings.Compare(a, b))
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }
