package assets

import (
	"fmt"
	"strings"
)

// tokKind is the kind of a condition token.
type tokKind int

const (
	tokEnd tokKind = iota
	tokOperand
	tokAnd
	tokOr
	tokEq
	tokNe
	tokLParen
	tokRParen
)

// operators are the tokens that end an unquoted operand, longest first.
var operators = []struct {
	text string
	kind tokKind
}{
	{"&&", tokAnd}, {"||", tokOr}, {"==", tokEq}, {"!=", tokNe}, {"(", tokLParen}, {")", tokRParen},
}

// token is one lexical unit of a condition. Operands carry their parsed
// template.
type token struct {
	kind tokKind
	text string
	tmpl *Template
}

// tokenize splits s into operators, parentheses and operands. {{ ... }} is
// atomic inside an operand, and a quoted operand runs to its closing quote,
// so neither is split by the operator characters they contain.
func tokenize(s string) ([]token, string) {
	var toks []token
	i := 0
	for {
		for i < len(s) && isSpace(s[i]) {
			i++
		}
		if i == len(s) {
			return toks, ""
		}
		if k, text := operatorAt(s, i); text != "" {
			toks = append(toks, token{kind: k, text: text})
			i += len(text)
			continue
		}
		var tok token
		var reason string
		if s[i] == '\'' || s[i] == '"' {
			tok, i, reason = quotedOperand(s, i)
		} else {
			tok, i, reason = plainOperand(s, i)
		}
		if reason != "" {
			return nil, reason
		}
		toks = append(toks, tok)
	}
}

func operatorAt(s string, i int) (tokKind, string) {
	for _, op := range operators {
		if strings.HasPrefix(s[i:], op.text) {
			return op.kind, op.text
		}
	}
	return tokEnd, ""
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r'
}

// quotedOperand reads the operand that starts with the quote at s[i]. Only
// spaces may separate it from the next operator.
func quotedOperand(s string, i int) (token, int, string) {
	q := s[i]
	end := strings.IndexByte(s[i+1:], q)
	if end < 0 {
		return token{}, 0, fmt.Sprintf("unterminated quoted string %s", quoteStart(s[i:]))
	}
	inner := s[i+1 : i+1+end]
	j := i + 1 + end + 1
	k := j
	for k < len(s) && isSpace(s[k]) {
		k++
	}
	if kind, _ := operatorAt(s, k); k < len(s) && kind == tokEnd {
		return token{}, 0, fmt.Sprintf("unexpected text after quoted string %s", s[i:j])
	}
	t, reason := parseTemplate(inner)
	if reason != "" {
		return token{}, 0, reason
	}
	return token{kind: tokOperand, text: s[i:j], tmpl: t}, j, ""
}

// plainOperand reads an unquoted operand: text up to the next operator or
// parenthesis outside {{ }}, trimmed. A single = or a : is part of the text.
func plainOperand(s string, i int) (token, int, string) {
	j := i
	for j < len(s) {
		if strings.HasPrefix(s[j:], "{{") {
			end := strings.Index(s[j+2:], "}}")
			if end < 0 {
				return token{}, 0, fmt.Sprintf("unterminated template %q", quoteStart(s[j:]))
			}
			j += 2 + end + 2
			continue
		}
		if _, text := operatorAt(s, j); text != "" {
			break
		}
		j++
	}
	text := strings.TrimSpace(s[i:j])
	t, reason := parseTemplate(text)
	if reason != "" {
		return token{}, 0, reason
	}
	return token{kind: tokOperand, text: text, tmpl: t}, j, ""
}
