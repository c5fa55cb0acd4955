package events

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
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
// returned as it is.
func (l *Log) shrink(ctx context.Context, data []byte) ([]byte, error) {
	if len(data) <= inlineBudget {
		return data, nil
	}
	doc, err := decodeJSON(data)
	if err != nil {
		return nil, err
	}
	var sites []*valueSite
	collectSites(doc, nil, &sites)
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
		enc, err := json.Marshal(next.value)
		if err != nil {
			return nil, err
		}
		ref, ok := stored[string(enc)]
		if !ok {
			if ref, err = l.PutBlob(ctx, enc); err != nil {
				return nil, err
			}
			stored[string(enc)] = ref
		}
		stub := map[string]any{blobKey: ref.Digest, "size": ref.Size, "preview": preview(enc)}
		stubEnc, _ := json.Marshal(stub)
		next.set(stub)
		next.moved = true
		saved := next.size - len(stubEnc)
		for p := next.parent; p != nil; p = p.parent {
			p.size -= saved
			p.open--
		}
		total -= saved
	}
	return json.Marshal(doc)
}

// expand returns data with every blob reference replaced by the value it
// stands for. Data without references is returned as it is.
func (l *Log) expand(ctx context.Context, data []byte) ([]byte, error) {
	if !hasBlobRefs(data) {
		return data, nil
	}
	doc, err := decodeJSON(data)
	if err != nil {
		return nil, err
	}
	if err := l.expandValue(ctx, &doc, map[string][]byte{}); err != nil {
		return nil, err
	}
	return json.Marshal(doc)
}

// hasBlobRefs reports whether data may hold a blob reference.
func hasBlobRefs(data []byte) bool { return bytes.Contains(data, []byte(`"`+blobKey+`"`)) }

// expandValue replaces the blob references in *v by their values. fetched
// holds the blobs already read for this document, by digest: a value
// stored once and referred to many times is read once.
func (l *Log) expandValue(ctx context.Context, v *any, fetched map[string][]byte) error {
	switch x := (*v).(type) {
	case map[string]any:
		if digest, ok := blobRef(x); ok {
			data, ok := fetched[digest]
			if !ok {
				var err error
				if data, err = l.GetBlob(ctx, digest); err != nil {
					return err
				}
				fetched[digest] = data
			}
			// Decoded for each reference: the copies must not share maps.
			val, err := decodeJSON(data)
			if err != nil {
				return fmt.Errorf("%w: blob %s: %v", ErrInvalidEvent, digest, err)
			}
			*v = val
			return l.expandValue(ctx, v, fetched) // a moved value may hold values moved before it
		}
		for k := range x {
			val := x[k]
			if err := l.expandValue(ctx, &val, fetched); err != nil {
				return err
			}
			x[k] = val
		}
	case []any:
		for i := range x {
			if err := l.expandValue(ctx, &x[i], fetched); err != nil {
				return err
			}
		}
	}
	return nil
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

// valueSite is a value inside a decoded document that shrink may move.
type valueSite struct {
	value  any
	set    func(any) // replaces the value in its map or list
	size   int       // of its encoding, less what moving sites inside it saved
	parent *valueSite
	open   int // sites inside it, at any depth, not moved
	moved  bool
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

// collectSites lists the values under v (not v itself, the document's
// shape) whose encoding is at least minBlobValue bytes, parents before
// their children, and returns the length of v's encoding. Lengths are
// summed from the leaves up, each value encoded once: encoding every
// listed value whole, as it once did, encoded a leaf once per level above
// it, a cost that grew with the depth of large payloads.
func collectSites(v any, parent *valueSite, out *[]*valueSite) int {
	visit := func(child any, set func(any)) int {
		// The site takes its place before its children, so the list stays
		// in document order; a value too small to move has no site
		// inside it either, and gives its place back.
		site := &valueSite{value: child, set: set, parent: parent}
		at := len(*out)
		*out = append(*out, site)
		site.size = collectSites(child, site, out)
		if site.size < minBlobValue {
			*out = (*out)[:at]
			return site.size
		}
		for p := parent; p != nil; p = p.parent {
			p.open++
		}
		return site.size
	}
	switch x := v.(type) {
	case map[string]any:
		size := 2 + max(len(x)-1, 0) // braces and commas
		for _, k := range slices.Sorted(maps.Keys(x)) {
			size += encodedLen(k) + 1 + visit(x[k], func(nv any) { x[k] = nv })
		}
		return size
	case []any:
		if x == nil {
			return len("null")
		}
		size := 2 + max(len(x)-1, 0)
		for i, child := range x {
			size += visit(child, func(nv any) { x[i] = nv })
		}
		return size
	}
	return encodedLen(v)
}

// encodedLen is the length of v's JSON encoding (0 if it has none).
// Numbers (decoded as written), booleans and null are counted without
// encoding them: a list of numbers is most of a large payload's leaves.
func encodedLen(v any) int {
	switch x := v.(type) {
	case nil:
		return len("null")
	case bool:
		if x {
			return len("true")
		}
		return len("false")
	case json.Number:
		return len(x)
	}
	enc, err := json.Marshal(v)
	if err != nil {
		return 0
	}
	return len(enc)
}

// decodeJSON decodes a JSON document keeping numbers as they were written.
func decodeJSON(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return v, nil
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
