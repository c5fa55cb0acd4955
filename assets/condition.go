package assets

import (
	"fmt"
	"strings"
)

// maxConditionDepth bounds how deeply parentheses may nest.
const maxConditionDepth = 64

// Condition is a parsed when or break_when expression:
//
//	true | false | A == B | A != B, joined by && and || (&& binds tighter),
//	with optional parentheses.
//
// Operands are text that may contain templates. An operand is everything
// between two operators, so literal text may hold spaces, = and :
// ("{{ steps.r.output.final_message }} == reviewed: blocking=0"). An operand
// that is entirely a quoted string ('x' or "x") is the text between the
// quotes, so it may hold operator characters too; templates inside it are
// still rendered. Operands are rendered, trimmed and compared as strings.
// A lone operand must be true, false or a single template; the template is
// true when it renders to true and false when it renders to false. Any
// other lone operand (yes, !true, {{ n }} > 0) is refused by the parser.
//
// IMPORTANT: the expression is parsed before anything is substituted, and
// {{ ... }} tokens are atomic, so a rendered value containing ==, &&, || or a
// parenthesis is compared as text and cannot change the expression.
//
// A parsed Condition is immutable and safe for concurrent use.
type Condition struct {
	root     *cnode
	operands []*Template
}

// Condition tree node kinds.
const (
	opOr = iota
	opAnd
	opEq
	opNe
	opTruth
)

type cnode struct {
	op          int
	left, right *cnode    // opOr, opAnd
	a, b        *Template // opEq, opNe (a and b), opTruth (a)
	rawA        string    // the operand of opTruth as written, for errors
}

// ParseCondition parses s. The error matches ErrInvalid and says what is
// wrong and where.
func ParseCondition(s string) (*Condition, error) {
	c, reason := parseCondition(s)
	if reason != "" {
		return nil, invalid(fmt.Sprintf("condition %q: %s", s, reason))
	}
	return c, nil
}

// parseCondition returns the condition, or the reason s is not one.
func parseCondition(s string) (*Condition, string) {
	toks, reason := tokenize(s)
	if reason != "" {
		return nil, reason
	}
	if len(toks) == 0 {
		return nil, "empty condition"
	}
	p := &condParser{toks: toks, c: &Condition{}}
	root, reason := p.or(0)
	if reason == "" && p.pos < len(toks) {
		reason = fmt.Sprintf("unexpected %q", toks[p.pos].text)
	}
	if reason != "" {
		return nil, reason
	}
	p.c.root = root
	return p.c, ""
}

// condParser is a recursive-descent parser over tokens.
type condParser struct {
	toks []token
	pos  int
	c    *Condition
}

func (p *condParser) peek() tokKind {
	if p.pos >= len(p.toks) {
		return tokEnd
	}
	return p.toks[p.pos].kind
}

func (p *condParser) or(depth int) (*cnode, string) {
	left, reason := p.and(depth)
	for reason == "" && p.peek() == tokOr {
		p.pos++
		var right *cnode
		right, reason = p.and(depth)
		left = &cnode{op: opOr, left: left, right: right}
	}
	return left, reason
}

func (p *condParser) and(depth int) (*cnode, string) {
	left, reason := p.primary(depth)
	for reason == "" && p.peek() == tokAnd {
		p.pos++
		var right *cnode
		right, reason = p.primary(depth)
		left = &cnode{op: opAnd, left: left, right: right}
	}
	return left, reason
}

// primary parses a parenthesized expression, a comparison or a lone operand.
func (p *condParser) primary(depth int) (*cnode, string) {
	switch p.peek() {
	case tokLParen:
		if depth >= maxConditionDepth {
			return nil, "parentheses nested too deeply"
		}
		p.pos++
		n, reason := p.or(depth + 1)
		if reason != "" {
			return nil, reason
		}
		if p.peek() != tokRParen {
			return nil, "missing )"
		}
		p.pos++
		if k := p.peek(); k == tokEq || k == tokNe {
			return nil, fmt.Sprintf("a parenthesized expression cannot be compared with %s", p.toks[p.pos].text)
		}
		return n, ""
	case tokOperand:
		a := p.operand()
		k := p.peek()
		if k != tokEq && k != tokNe {
			raw := p.toks[p.pos-1].text
			if reason := loneOperand(raw, a); reason != "" {
				return nil, reason
			}
			return &cnode{op: opTruth, a: a, rawA: raw}, ""
		}
		opText := p.toks[p.pos].text
		p.pos++
		if p.peek() != tokOperand {
			return nil, fmt.Sprintf("expected an operand after %s", opText)
		}
		b := p.operand()
		if k := p.peek(); k == tokEq || k == tokNe {
			return nil, "comparisons cannot be chained; join them with && or ||"
		}
		op := opEq
		if k == tokNe {
			op = opNe
		}
		return &cnode{op: op, a: a, b: b}, ""
	case tokEnd:
		return nil, "unexpected end of condition"
	}
	return nil, fmt.Sprintf("unexpected %q", p.toks[p.pos].text)
}

// loneOperand returns why an operand that stands alone (not compared) can
// never be a condition, or "" when it can: it must be the literal text true
// or false, or a single template whose value is decided at run time. Text
// around a template or any other literal would fail every run, so it is
// refused when the condition is parsed, which is at load.
func loneOperand(raw string, t *Template) string {
	var lit strings.Builder
	refs := 0
	for _, pt := range t.parts {
		if pt.ref != nil {
			refs++
			continue
		}
		lit.WriteString(pt.lit)
	}
	text := strings.TrimSpace(lit.String())
	switch {
	case refs == 0 && (text == "true" || text == "false"):
		return ""
	case refs == 1 && text == "":
		return ""
	case strings.Contains(text, "="):
		return "a single = is not an operator; compare with == or !="
	case strings.HasPrefix(raw, "!"):
		return fmt.Sprintf("%q: ! is not an operator; compare with != or write the opposite condition", quoteStart(raw))
	case refs > 0:
		return fmt.Sprintf("%q stands alone with text around its template: alone, an operand must be true, false or one {{ ... }}; compare it with == or !=", quoteStart(raw))
	}
	return fmt.Sprintf("%q stands alone and is neither true nor false; compare it with == or !=", quoteStart(raw))
}

func (p *condParser) operand() *Template {
	t := p.toks[p.pos].tmpl
	p.pos++
	p.c.operands = append(p.c.operands, t)
	return t
}

// Refs returns the template references of all operands, in the order they
// appear in the expression.
func (c *Condition) Refs() []Ref {
	var refs []Ref
	for _, t := range c.operands {
		refs = append(refs, t.Refs()...)
	}
	return refs
}

// Eval renders the operands against sc and evaluates the expression. && and
// || short-circuit, so an operand that is not reached is not rendered. Errors
// from rendering match ErrMissingValue; a lone operand that renders to
// neither true nor false is an error matching ErrInvalid.
func (c *Condition) Eval(sc *Scope) (bool, error) {
	return c.root.eval(sc)
}

func (n *cnode) eval(sc *Scope) (bool, error) {
	switch n.op {
	case opOr, opAnd:
		l, err := n.left.eval(sc)
		if err != nil || l == (n.op == opOr) {
			return l, err
		}
		return n.right.eval(sc)
	case opTruth:
		s, err := renderTrimmed(n.a, sc)
		if err != nil {
			return false, err
		}
		switch s {
		case "true":
			return true, nil
		case "false":
			return false, nil
		}
		return false, invalid(fmt.Sprintf("condition operand %s rendered %q, which is neither true nor false", n.rawA, s))
	}
	a, err := renderTrimmed(n.a, sc)
	if err != nil {
		return false, err
	}
	b, err := renderTrimmed(n.b, sc)
	if err != nil {
		return false, err
	}
	return (a == b) == (n.op == opEq), nil
}

func renderTrimmed(t *Template, sc *Scope) (string, error) {
	s, err := t.Render(sc)
	return strings.TrimSpace(s), err
}
