package assets

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"unicode/utf8"

	"gopkg.in/yaml.v3"
)

// The loaders read YAML through yaml.v3's Node API rather than by unmarshaling
// into structs, so that every problem carries a line number and a path, and
// unknown keys are found with their location.

// maxExpandedNodes bounds the size of a document once its aliases are
// expanded, so that a few lines of anchors cannot make the loader build
// billions of values.
const maxExpandedNodes = 1 << 20

// yamlLine extracts the line from yaml.v3's syntax errors, which carry it
// only in their text ("yaml: line 3: did not find expected key").
var yamlLine = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// decoder reads the YAML of one file and collects its problems.
type decoder struct {
	problems
}

func newDecoder(file string) *decoder {
	return &decoder{problems: problems{file: file}}
}

// addAt records a problem located at node n.
func (d *decoder) addAt(n *yaml.Node, path, reason string) {
	line := 0
	if n != nil {
		line = n.Line
	}
	d.add(line, path, reason)
}

// parseDocument parses data as exactly one YAML document and returns its
// root node with aliases checked, or nil after recording why it cannot. With
// allowEmpty, a file with no document (or an empty one) gives nil and no
// problem.
func (d *decoder) parseDocument(data []byte, allowEmpty bool) *yaml.Node {
	const empty = "empty file: expected a YAML document"
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		switch {
		case !errors.Is(err, io.EOF):
			d.syntaxError(err)
		case !allowEmpty:
			d.add(0, "", empty)
		}
		return nil
	}
	var extra yaml.Node
	switch err := dec.Decode(&extra); {
	case err == nil:
		d.add(extra.Line, "", "more than one YAML document: put each asset in its own file")
		return nil
	case !errors.Is(err, io.EOF):
		d.syntaxError(err)
		return nil
	}
	if len(doc.Content) == 0 || allowEmpty && isNull(resolve(doc.Content[0])) {
		if !allowEmpty {
			d.add(0, "", empty)
		}
		return nil
	}
	root := doc.Content[0]
	if !d.checkAliases(root) {
		return nil
	}
	return resolve(root)
}

func (d *decoder) syntaxError(err error) {
	if m := yamlLine.FindStringSubmatch(err.Error()); m != nil {
		line, _ := strconv.Atoi(m[1])
		d.add(line, "", "invalid YAML: "+m[2])
		return
	}
	d.add(0, "", "invalid YAML: "+err.Error())
}

// checkAliases reports an alias that refers to a node containing it and a
// document that grows past maxExpandedNodes once aliases are expanded. After
// it succeeds, the tree can be walked recursively without a guard.
func (d *decoder) checkAliases(root *yaml.Node) bool {
	sizes := map[*yaml.Node]int{}
	open := map[*yaml.Node]bool{}
	ok := true
	var size func(n *yaml.Node) int
	size = func(n *yaml.Node) int {
		if n.Kind == yaml.AliasNode {
			if open[n.Alias] {
				d.add(n.Line, "", "alias *"+n.Value+" refers to a node that contains it")
				ok = false
				return 1
			}
			n = n.Alias
		}
		if s, done := sizes[n]; done {
			return s
		}
		open[n] = true
		total := 1
		for _, c := range n.Content {
			total = min(total+size(c), maxExpandedNodes+1)
		}
		open[n] = false
		sizes[n] = total
		return total
	}
	if size(root) > maxExpandedNodes && ok {
		d.add(0, "", "document is too large once its aliases are expanded")
		ok = false
	}
	return ok
}

// resolve follows aliases to the node they name.
func resolve(n *yaml.Node) *yaml.Node {
	for n != nil && n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	return n
}

func isNull(n *yaml.Node) bool {
	return n == nil || (n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null")
}

// child and index build YAML paths.
func child(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func index(path string, i int) string {
	return path + "[" + strconv.Itoa(i) + "]"
}

// kindName names a node's kind for "must be a ..." problems.
func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	}
	if isNull(n) {
		return "empty"
	}
	return quoteValue(n.Value)
}

// quotedMax bounds how much of a value a problem quotes: a file that is
// one 10 MB scalar must not come back whole in its error.
const quotedMax = 64

// quoteValue quotes a value of the file for a problem, cut at quotedMax
// bytes (at a character boundary) with its full length said.
func quoteValue(v string) string {
	if len(v) <= quotedMax {
		return strconv.Quote(v)
	}
	cut := quotedMax
	for cut > 0 && !utf8.RuneStart(v[cut]) {
		cut--
	}
	return strconv.Quote(v[:cut]) + fmt.Sprintf("… (%d bytes)", len(v))
}

// scalarString returns the text of a string field. Any non-null scalar is
// accepted as its literal text, so that args: [-n, 3] means "-n", "3".
func (d *decoder) scalarString(n *yaml.Node, path string) (string, bool) {
	n = resolve(n)
	if n.Kind != yaml.ScalarNode || isNull(n) {
		d.addAt(n, path, "must be a string, not "+kindName(n))
		return "", false
	}
	return n.Value, true
}

// scalarInt returns the value of an integer field.
func (d *decoder) scalarInt(n *yaml.Node, path string) (int, bool) {
	n = resolve(n)
	var v int
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!int" || n.Decode(&v) != nil {
		d.addAt(n, path, "must be an integer, not "+kindName(n))
		return 0, false
	}
	return v, true
}

// stringList returns the items of a list of strings.
func (d *decoder) stringList(n *yaml.Node, path string) ([]string, bool) {
	n = resolve(n)
	if n.Kind != yaml.SequenceNode {
		d.addAt(n, path, "must be a list of strings, not "+kindName(n))
		return nil, false
	}
	out := make([]string, 0, len(n.Content))
	ok := true
	for i, item := range n.Content {
		s, good := d.scalarString(item, index(path, i))
		ok = ok && good
		out = append(out, s)
	}
	return out, ok
}

// intList returns the items of a list of integers.
func (d *decoder) intList(n *yaml.Node, path string) ([]int, bool) {
	n = resolve(n)
	if n.Kind != yaml.SequenceNode {
		d.addAt(n, path, "must be a list of integers, not "+kindName(n))
		return nil, false
	}
	out := make([]int, 0, len(n.Content))
	ok := true
	for i, item := range n.Content {
		v, good := d.scalarInt(item, index(path, i))
		ok = ok && good
		out = append(out, v)
	}
	return out, ok
}
