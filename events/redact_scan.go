package events

import (
	"encoding/binary"
	"slices"
)

// The forms of every secret are found in one pass over a text, however
// many secrets there are: an index holds each 4-byte substring (gram) of
// each form, and the text is probed at every third position. A run of
// need ≥ 6 consecutive characters of a form (minSecretLen, and more for the
// others) covers at least one probed gram whole, so every run long enough
// is found; a probe whose gram the index holds is extended both ways,
// character by character, against each form that has it.
//
// Line breaks inside a run are stepped over (see breakAt): a secret folded
// over lines, raw or in a JSON string, is found as long as each piece
// holds a probed gram, which a piece of six characters or more does.
const (
	gramLen    = 4
	gramStride = 3
	// gramMul spreads grams over the index's bitmap (Fibonacci hashing).
	gramMul = 0x9E3779B97F4A7C15
	// maxGramRefs bounds the places one gram is looked for at, which a
	// secret that repeats itself (aaaaaaaaaaaa) would make as many as its
	// length, each tried at every probe of a text that repeats it too.
	// Such a secret's runs are still found, from the first places.
	maxGramRefs = 32
)

// gramRef is where a gram is in a form.
type gramRef struct {
	form int32
	off  int32
}

// formIndex finds the forms of the secrets in a text. The zero value is
// empty. It is not safe for concurrent use: the Redactor guards it.
type formIndex struct {
	forms []secretForm
	grams map[uint32][]gramRef
	// bits has a bit set for the hash of each gram in grams: most probes
	// of a text end with one load from it. It is kept at eight bits per
	// gram or more, so that about one probe in eight goes on to the map.
	bits  []uint64
	shift uint // 64 - log2 of the number of bits
}

// span is a run of a secret found in a text: bytes [start, end).
type span struct{ start, end int }

// add puts f into the index.
func (x *formIndex) add(f secretForm) {
	if x.grams == nil {
		x.grams = map[uint32][]gramRef{}
	}
	id := int32(len(x.forms))
	x.forms = append(x.forms, f)
	for off := 0; off+gramLen <= len(f.text); off++ {
		g := binary.LittleEndian.Uint32(f.text[off:])
		if len(x.grams[g]) < maxGramRefs {
			x.grams[g] = append(x.grams[g], gramRef{form: id, off: int32(off)})
		}
	}
	if len(x.bits)*64 < 8*len(x.grams) {
		x.resize()
	} else {
		for off := 0; off+gramLen <= len(f.text); off++ {
			x.mark(binary.LittleEndian.Uint32(f.text[off:]))
		}
	}
}

// resize makes the bitmap eight bits per gram or more (and 2^16 at least)
// and sets the bit of every gram.
func (x *formIndex) resize() {
	bits := uint(16)
	for 1<<bits < 8*len(x.grams) {
		bits++
	}
	x.bits, x.shift = make([]uint64, 1<<bits/64), 64-bits
	for g := range x.grams {
		x.mark(g)
	}
}

func (x *formIndex) mark(g uint32) {
	h := uint64(g) * gramMul >> x.shift
	x.bits[h>>6] |= 1 << (h & 63)
}

// spans returns the runs of forms in b, sorted and merged, each widened to
// whole JSON escapes (see snap). In a JSON document (json) the forms a
// JSON string cannot hold as they are are not looked for.
func (x *formIndex) spans(b []byte, json bool) []span {
	if len(x.bits) == 0 {
		return nil
	}
	var found []span
	covered := 0 // the end of the last run found
	for i := 0; i+gramLen <= len(b); i += gramStride {
		g := binary.LittleEndian.Uint32(b[i:])
		h := uint64(g) * gramMul >> x.shift
		if x.bits[h>>6]&(1<<(h&63)) == 0 || i+gramLen <= covered {
			continue
		}
		for _, ref := range x.grams[g] {
			if json && x.forms[ref.form].notJSON {
				continue
			}
			if s, ok := x.extend(b, i, ref); ok {
				found = append(found, s)
				covered = max(covered, s.end)
			}
		}
	}
	if len(found) == 0 {
		return nil
	}
	return merge(snap(b, merge(found)))
}

// extend grows the gram of ref's form found at b[i:] into the longest run
// of the form around it, stepping over line breaks, and reports whether
// that run is long enough to count. The run is the form's characters
// first..last, at b[start:end].
func (x *formIndex) extend(b []byte, i int, ref gramRef) (span, bool) {
	f := x.forms[ref.form]
	p := f.text
	// Right, from after the gram.
	t, last, end := i+gramLen, int(ref.off)+gramLen, i+gramLen
	for last < len(p) && t < len(b) {
		if b[t] == p[last] {
			t, last = t+1, last+1
			end = t
			continue
		}
		n := breakAt(b, t)
		if n == 0 {
			break
		}
		t += n
	}
	// Left, from the gram's start.
	t, first, start := i, int(ref.off), i
	for first > 0 && t > 0 {
		if b[t-1] == p[first-1] {
			t, first = t-1, first-1
			start = t
			continue
		}
		n := breakBefore(b, t)
		if n == 0 {
			break
		}
		t -= n
	}
	// A run of an escaped form begins and ends with whole escapes.
	for f.cut != nil && first < last && !f.cut[first] {
		first, start = first+1, start+1
		for start < end && breakAt(b, start) > 0 {
			start += breakAt(b, start)
		}
	}
	for f.cut != nil && last > first && !f.cut[last] {
		last, end = last-1, end-1
		for end > start && breakBefore(b, end) > 0 {
			end -= breakBefore(b, end)
		}
	}
	return span{start: start, end: end}, last-first >= f.need
}

// breakAt returns the length of the line break at b[i:] — a newline or a
// carriage return, raw or as a JSON escape — and 0 when there is none.
func breakAt(b []byte, i int) int {
	switch {
	case b[i] == '\n' || b[i] == '\r':
		return 1
	case b[i] == '\\' && i+1 < len(b) && (b[i+1] == 'n' || b[i+1] == 'r') && !escaped(b, i):
		return 2
	}
	return 0
}

// breakBefore is breakAt for the line break that ends at b[i-1].
func breakBefore(b []byte, i int) int {
	switch {
	case b[i-1] == '\n' || b[i-1] == '\r':
		return 1
	case i >= 2 && b[i-2] == '\\' && (b[i-1] == 'n' || b[i-1] == 'r') && !escaped(b, i-2):
		return 2
	}
	return 0
}

// escaped reports whether the backslash at b[i] is itself escaped: the
// second of a pair, after an odd number of backslashes.
func escaped(b []byte, i int) bool {
	n := 0
	for j := i - 1; j >= 0 && b[j] == '\\'; j-- {
		n++
	}
	return n%2 == 1
}

// merge sorts spans and joins those that overlap or touch.
func merge(spans []span) []span {
	slices.SortFunc(spans, func(a, b span) int { return a.start - b.start })
	out := spans[:1]
	for _, s := range spans[1:] {
		last := &out[len(out)-1]
		if s.start <= last.end {
			last.end = max(last.end, s.end)
			continue
		}
		out = append(out, s)
	}
	return out
}

// snap widens each span (sorted) to whole JSON escapes (\", \\, \n,
// \u00e9, …): replaced, a span that began or ended inside one would leave
// a lone backslash, and a JSON document that no longer parses. In text
// that is not JSON it widens a span by a character at most.
func snap(b []byte, spans []span) []span {
	j := 0
	for u := 0; u < len(b) && j < len(spans); {
		n := escapeLen(b, u)
		for j < len(spans) && spans[j].start < u+n {
			s := &spans[j]
			if s.start > u {
				s.start = u
			}
			if s.end > u+n {
				break // its end is in a later unit
			}
			if s.end > u {
				s.end = u + n
			}
			j++
		}
		u += n
	}
	return spans
}
