package events

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"unicode/utf8"
)

// Large values. A message on a NATS server is at most its max_payload (1 MiB
// by default), and an event or a command may carry values bigger than
// that: a fan_out's collected outputs, a large --input. Before a payload
// whose encoding is over inlineBudget is published, its largest values are
// stored as blobs (content-addressed, redacted like the log) and replaced by
// a reference, until it fits:
//
//	{"$blob": "sha256-…", "size": 2712345, "preview": "[{\"exit_code\":0,…"}
//
// The reference depends only on the value, so a decision recorded again
// (a replay, a redelivery) records the same bytes. Feeds, reads and command
// consumers put the values back before they deliver (unless
// FollowOptions.BlobRefs asks for the log as stored, as the views do).
const (
	inlineBudget = 256 << 10
	// minBlobValue is the smallest value worth a blob of its own.
	minBlobValue = 1 << 10
	previewBytes = 200
)

// blobKey is the key that marks a reference to a value stored as a blob.
const blobKey = "$blob"

// BlobValue is the reference that stands in a payload for a value stored as
// a blob.
type BlobValue struct {
	Blob    string `json:"$blob"`
	Size    int64  `json:"size"`
	Preview string `json:"preview"`
}

// shrink returns data, a JSON document, with its largest values moved to
// blobs until it is at most inlineBudget bytes. Data within the budget is
// returned as it is. The document is worked on as bytes: the values moved
// are stored as they are encoded in it, and the rest is kept as written.
func (l *Log) shrink(ctx context.Context, data []byte) ([]byte, error) {
	if len(data) <= inlineBudget {
		return data, nil
	}
	sites, err := scanSites(data)
	if err != nil {
		return nil, err
	}
	// A document often holds one value many times (each output of a
	// fan-out carrying the same input): it is stored once, not asked
	// about once per copy.
	stored := map[string]BlobRef{}
	total := len(data)
	for total > inlineBudget {
		next := largestLeaf(sites)
		if next == nil {
			break
		}
		enc := spliced(data, next.start, next.end, sites)
		ref, ok := stored[string(enc)]
		if !ok {
			if ref, err = l.PutBlob(ctx, enc); err != nil {
				return nil, err
			}
			stored[string(enc)] = ref
		}
		next.stub, _ = json.Marshal(map[string]any{blobKey: ref.Digest, "size": ref.Size, "preview": preview(enc)})
		next.moved = true
		saved := next.size - len(next.stub)
		for p := next.parent; p != nil; p = p.parent {
			p.size -= saved
			p.open--
		}
		total -= saved
	}
	return spliced(data, 0, len(data), sites), nil
}

// spliced returns data[start:end] with each moved site in that range
// replaced by its reference (a site inside a moved one goes with it).
func spliced(data []byte, start, end int, sites []*valueSite) []byte {
	out := make([]byte, 0, end-start)
	pos := start
	for _, s := range sites {
		if !s.moved || s.start < pos || s.end > end {
			continue
		}
		out = append(out, data[pos:s.start]...)
		out = append(out, s.stub...)
		pos = s.end
	}
	return append(out, data[pos:end]...)
}

// expand returns data with every blob reference replaced by the value it
// stands for. Data without references is returned as it is.
func (l *Log) expand(ctx context.Context, data []byte) ([]byte, error) {
	if !hasBlobRefs(data) {
		return data, nil
	}
	return l.expandRefs(ctx, data, map[string][]byte{})
}

// Expand returns ev with the values its data holds as blob references put
// back, as feeds and reads deliver it; EventAt returns an event as stored.
func (l *Log) Expand(ctx context.Context, ev Event) (Event, error) {
	data, err := l.expand(ctx, ev.Data)
	if err != nil {
		return Event{}, err
	}
	ev.Data = data
	return ev, nil
}

// hasBlobRefs reports whether data may hold a blob reference.
func hasBlobRefs(data []byte) bool { return bytes.Contains(data, []byte(`"`+blobKey+`"`)) }

// expandRefs splices into data, a JSON document, the values its blob
// references stand for. fetched holds the values already read for this
// document, by digest: a value stored once and referred to many times is
// read once.
//
// A reference is an object whose first key is "$blob" (shrink writes it
// with json.Marshal, whose keys come sorted). The bytes `"$blob"` occur in
// a JSON document only as a string of its own (inside a string the quotes
// would be escaped), so each occurrence is a key or a value; it stands
// for a reference when an object opens just before it and the object is
// one (blobRef).
func (l *Log) expandRefs(ctx context.Context, data []byte, fetched map[string][]byte) ([]byte, error) {
	key := []byte(`"` + blobKey + `"`)
	var out []byte
	pos := 0 // data[:pos] is in out
	for from := 0; ; {
		i := bytes.Index(data[from:], key)
		if i < 0 {
			break
		}
		at := from + i
		from = at + len(key)
		open := at - 1
		for open >= 0 && isSpace(data[open]) {
			open--
		}
		if open < 0 || data[open] != '{' {
			continue
		}
		end, err := valueEnd(data, open)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrInvalidEvent, err)
		}
		var m map[string]any
		if json.Unmarshal(data[open:end], &m) != nil {
			continue
		}
		digest, ok := blobRef(m)
		if !ok {
			continue
		}
		val, ok := fetched[digest]
		if !ok {
			raw, err := l.GetBlob(ctx, digest)
			if err != nil {
				return nil, err
			}
			if !json.Valid(raw) {
				return nil, fmt.Errorf("%w: blob %s is not JSON", ErrInvalidEvent, digest)
			}
			// A moved value may hold values moved before it.
			if hasBlobRefs(raw) {
				if raw, err = l.expandRefs(ctx, raw, fetched); err != nil {
					return nil, err
				}
			}
			val = raw
			fetched[digest] = val
		}
		out = append(out, data[pos:open]...)
		out = append(out, val...)
		pos, from = end, end
	}
	if out == nil {
		return data, nil
	}
	return append(out, data[pos:]...), nil
}

// blobRef reports whether m is a reference written by shrink, and its
// digest.
func blobRef(m map[string]any) (string, bool) {
	digest, ok := m[blobKey].(string)
	if !ok || len(m) != 3 {
		return "", false
	}
	_, sized := m["size"]
	_, previewed := m["preview"]
	return digest, sized && previewed
}

// valueSite is a value inside an encoded document that shrink may move:
// data[start:end].
type valueSite struct {
	start, end int
	size       int // of its encoding, less what moving sites inside it saved
	parent     *valueSite
	open       int // sites inside it, at any depth, not moved
	moved      bool
	stub       []byte // the reference that replaces it once moved
}

// largestLeaf returns the largest site not moved that has no site inside
// it left to move: the values deepest in the document go first, so that
// the shape around them (a list of outputs, an exit code) stays in the
// event.
func largestLeaf(sites []*valueSite) *valueSite {
	var best *valueSite
	for _, s := range sites {
		if !s.moved && s.open == 0 && s.size >= minBlobValue && (best == nil || s.size > best.size) {
			best = s
		}
	}
	return best
}

// preview is the start of an encoded value, cut at a character boundary.
func preview(enc []byte) string {
	if len(enc) <= previewBytes {
		return string(enc)
	}
	cut := previewBytes
	for cut > 0 && !utf8.RuneStart(enc[cut]) {
		cut--
	}
	return string(enc[:cut]) + "…"
}
