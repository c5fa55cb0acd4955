package assets

import (
	"errors"
	"sort"
	"strconv"
	"strings"
)

// ErrInvalid is matched (errors.Is) by every error that reports an invalid
// asset, config file, template or condition: anything a user fixes by editing
// YAML. I/O errors (an unreadable file) are returned as they are instead.
var ErrInvalid = errors.New("invalid")

// ErrNotFound is matched by the error a catalog returns for a job, activity
// or executor name that no layer defines, and by SeededFile's for a name
// that is not a seeded file.
var ErrNotFound = errors.New("not found")

// ErrMissingValue is matched by the error rendering returns when a template
// refers to a value the scope does not have: a missing key, an index out of
// range, an unset environment variable, a step that has no result, or item or
// iteration outside a fan-out or loop.
var ErrMissingValue = errors.New("missing value")

// Problem is one thing wrong with an asset, located by file, line and YAML
// path. Line is 1-based; 0 means the problem has no single line (an empty
// file). Path uses YAML keys and [i] indexes, for example
// spec.steps[1].parallel.branches[0].spec.program; it is empty for problems
// with the document as a whole.
type Problem struct {
	File   string `json:"file,omitempty"`
	Line   int    `json:"line,omitempty"`
	Path   string `json:"path,omitempty"`
	Reason string `json:"reason"`
}

// String formats the problem as FILE:LINE: PATH: REASON, leaving out the
// parts that are empty.
func (p Problem) String() string {
	var b strings.Builder
	b.WriteString(p.File)
	if p.Line > 0 {
		if p.File != "" {
			b.WriteByte(':')
		} else {
			b.WriteString("line ")
		}
		b.WriteString(strconv.Itoa(p.Line))
	}
	if b.Len() > 0 {
		b.WriteString(": ")
	}
	if p.Path != "" {
		b.WriteString(cutMiddle(p.Path, pathMax))
		b.WriteString(": ")
	}
	b.WriteString(boundReason(p.Reason))
	return b.String()
}

// Error is a list of problems found while loading one or more files. It
// always holds at least one problem, and it matches ErrInvalid.
//
// Problems of one file are in document order; a catalog lists files in the
// order it read them.
type Error struct {
	Problems []Problem
}

// Error prints one problem per line.
func (e *Error) Error() string {
	lines := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		lines[i] = p.String()
	}
	return strings.Join(lines, "\n")
}

// Is reports whether target is ErrInvalid.
func (e *Error) Is(target error) bool { return target == ErrInvalid }

// invalid returns an *Error with a single problem that has no location: a
// template or condition parsed outside of a file, a bad option.
func invalid(reason string) error {
	return &Error{Problems: []Problem{{Reason: boundReason(reason)}}}
}

// missingError is a reference to a value that is not in the scope.
type missingError struct {
	token  string // the template as written, e.g. {{ input.name }}
	reason string
}

func (e *missingError) Error() string { return e.token + ": " + e.reason }

func (e *missingError) Is(target error) bool { return target == ErrMissingValue }

// problems collects the problems of one file.
type problems struct {
	file string
	list []Problem
}

func (ps *problems) add(line int, path, reason string) {
	ps.list = append(ps.list, Problem{File: ps.file, Line: line, Path: cutMiddle(path, pathMax), Reason: boundReason(reason)})
}

// err returns the collected problems in document order, or nil when there
// are none. Problems on the same line keep the order they were found in.
func (ps *problems) err() error {
	if len(ps.list) == 0 {
		return nil
	}
	list := append([]Problem(nil), ps.list...)
	sort.SliceStable(list, func(i, j int) bool { return list[i].Line < list[j].Line })
	return &Error{Problems: list}
}
