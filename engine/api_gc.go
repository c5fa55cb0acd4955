package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/shipping"
)

// EndpointGC collects what finished work left behind (orbit gc): a dry
// run unless the request says Apply. Only the client identity may call it
// (the reader may not call the API at all), and the engine does the
// removing: no other identity may delete a blob.
const EndpointGC = "gc.collect"

// CollectOptions says what a collection looks at and what it may do. The
// zero value is a dry run of every kind with the default grace.
type CollectOptions struct {
	// Apply removes what is garbage; without it nothing is touched.
	Apply bool `json:"apply,omitempty"`
	// Blobs, Worktrees and Branches pick the kinds; none means all.
	Blobs     bool `json:"blobs,omitempty"`
	Worktrees bool `json:"worktrees,omitempty"`
	Branches  bool `json:"branches,omitempty"`
	// Grace is how old a blob must be, and how long ago a run must have
	// finished, for what it left to be collected (a Go duration; empty:
	// shipping.DefaultGCGrace, one hour).
	Grace string `json:"grace,omitempty"`
	// Force removes the branches of archived tasks that hold commits no
	// other ref has.
	Force bool `json:"force,omitempty"`
	// By names who asked, for the record.
	By string `json:"by,omitempty"`
}

// BlobEntry is a blob a collection removed or would remove.
type BlobEntry struct {
	Digest   string    `json:"digest"`
	Size     int64     `json:"size"`
	Modified time.Time `json:"modified"`
	Outcome  string    `json:"outcome"` // shipping.GCRemoved or GCWouldRemove
	Reason   string    `json:"reason"`
}

// BlobCounts says what became of the blobs a collection looked at.
type BlobCounts struct {
	Stored int `json:"stored"`
	// Kept counts the blobs the log or a command names, or that are
	// younger than the grace.
	Kept int `json:"kept"`
	// Collected counts those removed (or, in a dry run, to be), Bytes
	// their size.
	Collected int   `json:"collected"`
	Bytes     int64 `json:"bytes"`
}

// CollectReport is the outcome of a collection. Seq is the sequence of
// the gc.collected event that records what it removed (0: nothing was).
type CollectReport struct {
	DryRun     bool               `json:"dry_run"`
	Grace      string             `json:"grace"`
	BlobCounts *BlobCounts        `json:"blob_counts,omitempty"`
	Blobs      []BlobEntry        `json:"blobs"`
	Worktrees  []shipping.GCEntry `json:"worktrees"`
	Branches   []shipping.GCEntry `json:"branches"`
	Seq        uint64             `json:"seq,omitempty"`
}

// Collect finds, and with opts.Apply removes, what finished work left
// behind: blobs no event or queued command names and older than the grace
// (events.Log.UnreferencedBlobs), and the worktrees and branches of
// finished shipping runs and Groundhog attempts (shipping.Service.GC). A
// collection that removed anything is recorded as gc.collected. It is
// what orbit gc asks for, and what the retention policy's pass calls after
// it removes runs.
func (e *Engine) Collect(ctx context.Context, opts CollectOptions) (*CollectReport, error) {
	grace := shipping.DefaultGCGrace
	if opts.Grace != "" {
		d, err := time.ParseDuration(opts.Grace)
		if err != nil || d < 0 {
			return nil, fmt.Errorf("%w: grace %q: want a duration of 0 or more, such as 1h or 30m", events.ErrInvalidRequest, opts.Grace)
		}
		grace = d
	}
	if !opts.Blobs && !opts.Worktrees && !opts.Branches {
		opts.Blobs, opts.Worktrees, opts.Branches = true, true, true
	}
	now := time.Now()
	rep := &CollectReport{DryRun: !opts.Apply, Grace: shipping.GraceString(grace), Blobs: []BlobEntry{},
		Worktrees: []shipping.GCEntry{}, Branches: []shipping.GCEntry{}}
	rec := events.GCCollectedData{Grace: shipping.GraceString(grace), Force: opts.Force, By: opts.By, Signer: events.RequestSigner(ctx)}
	if opts.Worktrees || opts.Branches {
		g := grace
		if g == 0 {
			g = -1 // shipping's zero is its default
		}
		git, err := e.ship.GC(ctx, shipping.GCOptions{Apply: opts.Apply, Worktrees: opts.Worktrees, Branches: opts.Branches,
			Grace: g, Force: opts.Force, Now: now})
		if err != nil {
			return nil, err
		}
		rep.Worktrees, rep.Branches = git.Worktrees, git.Branches
		for _, w := range git.Worktrees {
			if w.Outcome == shipping.GCRemoved {
				rec.Worktrees = append(rec.Worktrees, w.Path)
			}
		}
		for _, b := range git.Branches {
			if b.Outcome == shipping.GCRemoved {
				rec.Branches = append(rec.Branches, b.Repository+":"+b.Branch+"@"+b.Commit)
			}
		}
	}
	if opts.Blobs {
		if err := e.collectBlobs(ctx, rep, &rec, now.Add(-grace), opts.Apply); err != nil {
			return nil, err
		}
	}
	if len(rec.Blobs)+len(rec.Worktrees)+len(rec.Branches) == 0 {
		return rep, nil
	}
	id := events.NewID()
	res, err := e.log.Append(ctx, events.Event{ID: id, Type: events.GCCollected, RunID: "gc-" + id}, rec)
	if err != nil {
		return nil, fmt.Errorf("recording the collection: %w", err)
	}
	rep.Seq = res.Seq
	return rep, nil
}

// collectBlobs adds the blobs older than cutoff that nothing names to rep,
// removing them when apply.
func (e *Engine) collectBlobs(ctx context.Context, rep *CollectReport, rec *events.GCCollectedData, cutoff time.Time, apply bool) error {
	stored, err := e.log.Blobs(ctx)
	if err != nil {
		return err
	}
	garbage, err := e.log.UnreferencedBlobs(ctx, cutoff)
	if err != nil {
		return err
	}
	counts := &BlobCounts{Stored: len(stored)}
	why := "no event in the log and no queued command names it, and it was stored before " + cutoff.UTC().Format(time.RFC3339)
	for _, b := range garbage {
		entry := BlobEntry{Digest: b.Digest, Size: b.Size, Modified: b.Modified, Outcome: shipping.GCWouldRemove, Reason: why}
		if apply {
			removed, err := e.log.DeleteBlob(ctx, b.Digest, cutoff)
			if err != nil {
				return err
			}
			if !removed {
				continue // stored again since it was listed
			}
			entry.Outcome = shipping.GCRemoved
			rec.Blobs = append(rec.Blobs, b.Digest)
			rec.BlobBytes += b.Size
		}
		rep.Blobs = append(rep.Blobs, entry)
		counts.Collected++
		counts.Bytes += b.Size
	}
	counts.Kept = counts.Stored - counts.Collected
	rep.BlobCounts = counts
	return nil
}

func (e *Engine) apiGC(ctx context.Context, raw json.RawMessage) (any, error) {
	var q CollectOptions
	if err := decode(raw, &q); err != nil {
		return nil, err
	}
	return e.Collect(ctx, q)
}
