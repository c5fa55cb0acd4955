package gitops

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// ScratchPrefix starts the name of every scratch branch.
const ScratchPrefix = "groundhog/"

// ScratchBranchName returns the scratch branch of a task's attempt:
// groundhog/<task>/day-<day>.
//
// The task id is made a valid single ref component by the rules of
// git check-ref-format: every character git refuses in a ref (control
// characters, space, ~ ^ : ? * [ \, DEL, and /) and every byte that is not
// valid UTF-8 becomes "-"; so do a leading or trailing ".", each "." of a
// "..", the "@" of "@{", and the "." of a trailing ".lock". Two task ids
// that differ only in such characters share their scratch branches; the
// second attempt to use one then fails with ErrScratchExists rather than
// overwrite it. A task id with nothing left, or a day below 1, is
// ErrInvalidArgument.
func ScratchBranchName(task string, day int) (string, error) {
	if day < 1 {
		return "", fmt.Errorf("%w: day %d: must be at least 1", ErrInvalidArgument, day)
	}
	c := sanitizeComponent(task)
	if strings.Trim(c, "-") == "" {
		return "", fmt.Errorf("%w: task id %q: nothing usable in a branch name", ErrInvalidArgument, task)
	}
	return ScratchPrefix + c + "/day-" + strconv.Itoa(day), nil
}

// sanitizeComponent makes s a ref component git accepts.
func sanitizeComponent(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		i += size
		switch {
		case r == utf8.RuneError && size <= 1,
			r < 0x20, r == 0x7f,
			strings.ContainsRune(" ~^:?*[\\/", r):
			b.WriteByte('-')
		default:
			b.WriteRune(r)
		}
	}
	c := b.String()
	for strings.Contains(c, "..") {
		c = strings.ReplaceAll(c, "..", "-.")
	}
	c = strings.ReplaceAll(c, "@{", "-{")
	if strings.HasPrefix(c, ".") {
		c = "-" + c[1:]
	}
	if strings.HasSuffix(c, ".") {
		c = c[:len(c)-1] + "-"
	}
	if strings.HasSuffix(c, ".lock") {
		c = strings.TrimSuffix(c, ".lock") + "-lock"
	}
	return c
}

// checkBranchName refuses a branch name that git commands could read as an
// option or a revision expression. checkRefFormat adds the rules of git
// check-ref-format.
func checkBranchName(what, name string) error {
	switch {
	case name == "", name == "HEAD", strings.HasPrefix(name, "-"),
		strings.ContainsAny(name, "\x00\n\r"):
		return fmt.Errorf("%w: %s %q is not a usable branch name", ErrInvalidArgument, what, name)
	}
	return nil
}

// checkRev refuses a revision git could read as an option.
func checkRev(what, rev string) error {
	if rev == "" || strings.HasPrefix(rev, "-") || strings.ContainsAny(rev, "\x00\n\r") {
		return fmt.Errorf("%w: %s %q is not a usable revision", ErrInvalidArgument, what, rev)
	}
	return nil
}

// isObjectID reports whether s is a full hexadecimal object id (SHA-1 or
// SHA-256).
func isObjectID(s string) bool {
	if len(s) != 40 && len(s) != 64 {
		return false
	}
	for _, c := range s {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// oneLine returns s up to its first line break, with control characters
// made spaces, for use in a commit subject.
func oneLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return ' '
		}
		return r
	}, strings.TrimSpace(s))
}

// validRefName reports whether git check-ref-format accepts ref, a full
// reference name: no component is empty or starts with ".", or ends with
// ".lock"; no "..", "@{", control character, space, ~ ^ : ? * [ or \
// anywhere; it does not end with "." and is not "@".
func validRefName(ref string) bool {
	if ref == "@" || strings.HasSuffix(ref, ".") {
		return false
	}
	for _, c := range strings.Split(ref, "/") {
		if c == "" || strings.HasPrefix(c, ".") || strings.HasSuffix(c, ".lock") ||
			strings.Contains(c, "..") || strings.Contains(c, "@{") {
			return false
		}
		for i := 0; i < len(c); i++ {
			if b := c[i]; b < 0x20 || b == 0x7f || strings.IndexByte(" ~^:?*[\\", b) >= 0 {
				return false
			}
		}
	}
	return true
}
