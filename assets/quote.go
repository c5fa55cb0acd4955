package assets

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Bounds of a problem's parts, once its quoted values are short: a value
// echoed without quotes (a template as written, a key in a YAML path) is
// cut in the middle.
const (
	reasonMax = 512
	pathMax   = 256
)

// boundReason returns reason with its quoted values shortened (see
// shortenQuotes) and, if it is still longer than reasonMax, its middle left
// out: the start says what is wrong where, the end what was expected.
//
// IMPORTANT: every problem's reason (and, cut at pathMax, its path) goes
// through it, so that a value of any size (a 10 MB step id, type, target,
// key or template) is reported in a line whichever check reports it.
func boundReason(reason string) string { return cutMiddle(shortenQuotes(reason), reasonMax) }

// cutMiddle returns s if it has at most max bytes, else its start and end
// (cut at character boundaries) with the number of bytes left out between.
func cutMiddle(s string, max int) string {
	if len(s) <= max {
		return s
	}
	head, from := max/2, len(s)-max*3/8
	for head > 0 && !utf8.RuneStart(s[head]) {
		head--
	}
	for from < len(s) && !utf8.RuneStart(s[from]) {
		from++
	}
	return fmt.Sprintf("%s… (%d bytes left out) …%s", s[:head], from-head, s[from:])
}

// shortenQuotes returns reason with every quoted value in it (a Go string
// literal, as %q writes one) that is longer than quotedMax bytes replaced by
// its first quotedMax bytes and its length (see quoteValue).
func shortenQuotes(reason string) string {
	if len(reason) <= quotedMax+2 || !strings.Contains(reason, `"`) {
		return reason
	}
	var b strings.Builder
	for {
		i := strings.IndexByte(reason, '"')
		if i < 0 {
			b.WriteString(reason)
			return b.String()
		}
		b.WriteString(reason[:i])
		reason = reason[i:]
		lit, err := strconv.QuotedPrefix(reason)
		if err != nil {
			b.WriteByte('"')
			reason = reason[1:]
			continue
		}
		reason = reason[len(lit):]
		if v, err := strconv.Unquote(lit); err == nil && len(v) > quotedMax {
			lit = quoteValue(v)
		}
		b.WriteString(lit)
	}
}

// Quote quotes a value of an asset for a message, as every problem does:
// at most 64 bytes of it, with its length said when it is longer.
func Quote(v string) string { return quoteValue(v) }
