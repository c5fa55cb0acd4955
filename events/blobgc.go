package events

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// Collecting blobs. A blob is referenced by the events and commands that
// carry its digest: a BlobRef ({"digest": "sha256-…"}) or a value moved to
// it by shrink ({"$blob": "sha256-…"}), and a moved value may itself hold
// references. A blob no event in the log and no command on the queue names
// is garbage once it is older than a grace period; UnreferencedBlobs finds
// those, DeleteBlob removes one.
//
// IMPORTANT: a blob is stored before the event that names it is appended
// (PutBlob returns the reference the event then carries). Two things keep
// a collection from removing a blob between the two:
//   - PutBlob touches a blob it finds already stored more than
//     blobTouchAge ago (its modification time becomes now), so a blob an
//     event is about to name was modified within blobTouchAge, whether it
//     was first stored now or long ago (touching each time would cost a
//     synced write per copy: a fan-out's items sharing one input);
//   - only blobs last modified before a cut-off, which the caller sets a
//     grace period before now, are candidates, and DeleteBlob checks the
//     time again, under the lock PutBlob holds, just before it deletes.
//
// So a blob is removed only if nothing stored or named it during the
// grace period less blobTouchAge: the grace must be well over
// blobTouchAge plus the time between PutBlob and the append of its event
// (milliseconds); the default grace is an hour.
// Within one engine the check and the delete are atomic with respect to
// PutBlob; across engines on one server a PutBlob and a DeleteBlob of the
// same blob in the same instant can still cross, which the grace period
// makes a blob unreferenced for all of it and named again at that instant.

// blobTouchAge is how old a blob PutBlob finds already stored must be for
// PutBlob to touch it.
const blobTouchAge = time.Minute

// touchAge is blobTouchAge, or Log.blobTouchAge when a test set it.
func (l *Log) touchAge() time.Duration {
	if l.blobTouch > 0 {
		return l.blobTouch
	}
	return blobTouchAge
}

// BlobInfo is one blob of the orbit_blobs object store.
type BlobInfo struct {
	Digest   string    `json:"digest"`
	Size     int64     `json:"size"`
	Modified time.Time `json:"modified"`
}

// blobDigestRE matches a blob's name anywhere in an event or a command:
// any such string protects the blob it names, a reference or not.
var blobDigestRE = regexp.MustCompile(blobDigestPrefix + `[0-9a-f]{64}`)

// movedValueRE matches a reference to a value moved to a blob, whose
// content may name further blobs.
var movedValueRE = regexp.MustCompile(`"\` + blobKey + `"\s*:\s*"(` + blobDigestPrefix + `[0-9a-f]{64})"`)

// Blobs lists the blobs PutBlob stored (those named sha256-…), by digest.
// Objects of the store with other names are not Orbit's blobs and are left
// out. ErrNotEngine on a Log made by Dial: listing reads the store's
// metadata with a consumer, which only the engine may make.
func (l *Log) Blobs(ctx context.Context) ([]BlobInfo, error) {
	if err := l.needCommands("Blobs"); err != nil {
		return nil, err
	}
	ctx, cancel := withDefaultTimeout(ctx)
	defer cancel()
	infos, err := l.blobs.List(ctx)
	if errors.Is(err, jetstream.ErrNoObjectsFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("%w: listing %s: %v", ErrUnavailable, BlobsStore, err)
	}
	var out []BlobInfo
	for _, info := range infos {
		if !blobDigestRE.MatchString(info.Name) || len(info.Name) != len(blobDigestPrefix)+64 {
			continue
		}
		out = append(out, BlobInfo{Digest: info.Name, Size: int64(info.Size), Modified: info.ModTime})
	}
	slices.SortFunc(out, func(a, b BlobInfo) int { return strings.Compare(a.Digest, b.Digest) })
	return out, nil
}

// UnreferencedBlobs returns the blobs last modified before cutoff that no
// event of the log and no command on the queue names, directly or through
// a value moved to a blob that one names. The commands are read first and
// the log after, up to its end then: a command taken off the queue in
// between has its events in the log by then.
func (l *Log) UnreferencedBlobs(ctx context.Context, cutoff time.Time) ([]BlobInfo, error) {
	all, err := l.Blobs(ctx)
	if err != nil {
		return nil, err
	}
	var old []BlobInfo
	for _, b := range all {
		if b.Modified.Before(cutoff) {
			old = append(old, b)
		}
	}
	if len(old) == 0 {
		return nil, nil
	}
	refs, err := l.BlobReferences(ctx)
	if err != nil {
		return nil, err
	}
	var out []BlobInfo
	for _, b := range old {
		if !refs[b.Digest] {
			out = append(out, b)
		}
	}
	return out, nil
}

// BlobReferences returns the digests of the blobs the command queue and
// the log name (see UnreferencedBlobs), with those named inside the values
// moved to blobs that they name.
func (l *Log) BlobReferences(ctx context.Context) (map[string]bool, error) {
	refs := map[string]bool{}
	moved := map[string]bool{}
	note := func(data []byte) {
		for _, d := range blobDigestRE.FindAll(data, -1) {
			refs[string(d)] = true
		}
		for _, m := range movedValueRE.FindAllSubmatch(data, -1) {
			moved[string(m[1])] = true
		}
	}
	if err := l.scanCommands(ctx, note); err != nil {
		return nil, err
	}
	last, err := l.LastSeq(ctx)
	if err != nil {
		return nil, err
	}
	err = l.Scan(ctx, 1, last, 1024, func(evs []Event) error {
		for _, ev := range evs {
			note(ev.Data)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	// A moved value may hold references of its own: read each once.
	read := map[string]bool{}
	for {
		var next []string
		for d := range moved {
			if !read[d] {
				next = append(next, d)
			}
		}
		if len(next) == 0 {
			return refs, nil
		}
		for _, d := range next {
			read[d] = true
			data, err := l.GetBlob(ctx, d)
			if errors.Is(err, ErrNotFound) {
				continue
			}
			if err != nil {
				return nil, err
			}
			note(data)
		}
	}
}

// scanCommands hands fn the body of every command on the queues (run
// requests and step commands).
func (l *Log) scanCommands(ctx context.Context, fn func([]byte)) error {
	if err := l.needCommands("scanCommands"); err != nil {
		return err
	}
	for _, q := range []struct {
		stream jetstream.Stream
		filter string
	}{{l.cmds, CommandsRoot + ".>"}, {l.steps, StepsRoot + ".>"}} {
		held, err := l.readCommands(ctx, q.stream, q.filter)
		if err != nil {
			return err
		}
		for _, m := range held {
			fn(m.Data)
		}
	}
	return nil
}

// DeleteBlob removes the blob digest if it was last modified before
// cutoff, and reports whether it did. It checks the time under the lock
// PutBlob holds, so a blob PutBlob touched since it was listed is kept.
// A blob already gone is not an error (false).
func (l *Log) DeleteBlob(ctx context.Context, digest string, cutoff time.Time) (bool, error) {
	if err := l.needCommands("DeleteBlob"); err != nil {
		return false, err
	}
	ctx, cancel := withDefaultTimeout(ctx)
	defer cancel()
	l.blobGC.Lock()
	defer l.blobGC.Unlock()
	info, err := l.blobs.GetInfo(ctx, digest)
	if errors.Is(err, jetstream.ErrObjectNotFound) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("%w: blob %s: %v", ErrUnavailable, digest, err)
	}
	if !info.ModTime.Before(cutoff) {
		return false, nil
	}
	if err := l.blobs.Delete(ctx, digest); err != nil && !errors.Is(err, jetstream.ErrObjectNotFound) {
		return false, fmt.Errorf("%w: deleting blob %s: %v", ErrUnavailable, digest, err)
	}
	l.blobCache.forget(digest)
	return true, nil
}
