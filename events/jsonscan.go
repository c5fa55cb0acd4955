package events

import (
	"errors"
	"fmt"
)

// errBadJSON is what the scanner reports of a document that is not JSON.
var errBadJSON = errors.New("not a JSON document")

// jsonScanner walks an encoded JSON document without decoding it: large
// payloads are shrunk and expanded by their bytes, so that a fan-in's
// hundreds of outputs are not decoded into maps and encoded again to move
// a few values in or out. It checks the structure it walks (brackets,
// strings, separators), not the spelling of numbers and literals, which
// the document's eventual decoder does.
type jsonScanner struct {
	data []byte
	pos  int
	// sites, when listing, collects the values at least minBlobValue bytes
	// long, parents before their children.
	listing bool
	sites   []*valueSite
}

// scanSites lists the values under the document data (not the document
// itself, its shape) whose encoding is at least minBlobValue bytes long,
// parents before their children, each with its byte range in data.
func scanSites(data []byte) ([]*valueSite, error) {
	s := &jsonScanner{data: data, listing: true}
	s.space()
	if err := s.body(nil); err != nil {
		return nil, err
	}
	s.space()
	if s.pos != len(data) {
		return nil, s.fail("after the document")
	}
	return s.sites, nil
}

// valueEnd returns the offset just past the JSON value that starts at
// data[at].
func valueEnd(data []byte, at int) (int, error) {
	s := &jsonScanner{data: data, pos: at}
	if err := s.body(nil); err != nil {
		return 0, err
	}
	return s.pos, nil
}

func (s *jsonScanner) fail(what string) error {
	return fmt.Errorf("%w: unexpected byte at %d, %s", errBadJSON, s.pos, what)
}

// value scans one value inside a container; parent is the site of the
// value around it (nil at the document's top level).
func (s *jsonScanner) value(parent *valueSite) error {
	if !s.listing {
		return s.body(nil)
	}
	// The site takes its place before its children, so the list stays in
	// document order; a value too small to move has no site inside it
	// either, and gives its place back.
	site := &valueSite{start: s.pos, parent: parent}
	at := len(s.sites)
	s.sites = append(s.sites, site)
	if err := s.body(site); err != nil {
		return err
	}
	site.end = s.pos
	site.size = site.end - site.start
	if site.size < minBlobValue {
		s.sites = s.sites[:at]
		return nil
	}
	for p := parent; p != nil; p = p.parent {
		p.open++
	}
	return nil
}

// body scans the value at s.pos; the values inside it get site as their
// parent.
func (s *jsonScanner) body(site *valueSite) error {
	if s.pos >= len(s.data) {
		return s.fail("end of the document")
	}
	switch s.data[s.pos] {
	case '{':
		return s.container('}', site)
	case '[':
		return s.container(']', site)
	case '"':
		return s.str()
	}
	start := s.pos
	for s.pos < len(s.data) && !isDelimiter(s.data[s.pos]) {
		s.pos++
	}
	if s.pos == start {
		return s.fail("want a value")
	}
	return nil
}

// container scans an object or a list, from its opening bracket to close.
func (s *jsonScanner) container(close byte, site *valueSite) error {
	s.pos++
	s.space()
	if s.pos < len(s.data) && s.data[s.pos] == close {
		s.pos++
		return nil
	}
	for {
		s.space()
		if close == '}' {
			if err := s.str(); err != nil {
				return err
			}
			s.space()
			if s.pos >= len(s.data) || s.data[s.pos] != ':' {
				return s.fail("want ':'")
			}
			s.pos++
			s.space()
		}
		if err := s.value(site); err != nil {
			return err
		}
		s.space()
		if s.pos >= len(s.data) {
			return s.fail("end of the document in a container")
		}
		switch s.data[s.pos] {
		case ',':
			s.pos++
		case close:
			s.pos++
			return nil
		default:
			return s.fail("want ',' or the container's end")
		}
	}
}

// str scans a string, quotes included.
func (s *jsonScanner) str() error {
	if s.pos >= len(s.data) || s.data[s.pos] != '"' {
		return s.fail("want a string")
	}
	for s.pos++; s.pos < len(s.data); s.pos++ {
		switch s.data[s.pos] {
		case '\\':
			s.pos++
		case '"':
			s.pos++
			return nil
		}
	}
	return s.fail("end of the document in a string")
}

func (s *jsonScanner) space() {
	for s.pos < len(s.data) && isSpace(s.data[s.pos]) {
		s.pos++
	}
}

func isDelimiter(c byte) bool {
	return isSpace(c) || c == ',' || c == ':' || c == ']' || c == '}' || c == '[' || c == '{' || c == '"'
}
