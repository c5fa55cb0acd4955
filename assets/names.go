package assets

import (
	"fmt"
	"regexp"
)

// MaxNameBytes bounds every name and id an asset declares or refers to:
// metadata.name, step ids, fan_in collect names, activity references and
// fs_profiles names. They are written into subjects, keys and every event
// of a run, so a name of megabytes would make a run that validates but whose
// events the log cannot store.
const MaxNameBytes = 128

var (
	// assetName is the form of metadata.name, and so of every name a
	// catalog resolves.
	assetName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]*$`)

	// stepID is the form of a step id and of a fan_in collect name; ids
	// appear in templates (steps.<id>) and in step keys (loop/2/review).
	stepID = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_-]*$`)

	// envName is the form of an environment variable's name that Orbit
	// sets or reads.
	envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
)

// nameProblem is what is wrong with s as a name of form re, with form
// saying what re wants; "" when nothing is. The length is checked first.
func nameProblem(s string, re *regexp.Regexp, form string) string {
	if p := lengthProblem(s); p != "" {
		return p
	}
	if !re.MatchString(s) {
		return fmt.Sprintf("%q %s", s, form)
	}
	return ""
}

// lengthProblem says that s is over MaxNameBytes; "" when it is not.
func lengthProblem(s string) string {
	if len(s) > MaxNameBytes {
		return fmt.Sprintf("%s is longer than a name may be (%d bytes)", Quote(s), MaxNameBytes)
	}
	return ""
}

// Forms of names, as nameProblem words them.
const (
	assetNameForm = "must start with a letter or digit and contain only letters, digits, _, . and -"
	stepIDForm    = "must start with a letter or _ and contain only letters, digits, _ and -"
)

// suggest returns the candidate closest to word when it is within edit
// distance 2 (and closer than the length of word, so that short words do not
// match everything), or "" when none is.
func suggest(word string, candidates []string) string {
	best, bestDist := "", 3
	for _, c := range candidates {
		// The distance is at least the difference in length: a word far
		// longer than every candidate (a pasted value) costs no more than
		// this comparison.
		if max(len(word)-len(c), len(c)-len(word)) >= bestDist {
			continue
		}
		if d := EditDistance(word, c); d < bestDist && d < len(word) {
			best, bestDist = c, d
		}
	}
	return best
}

// EditDistance is the optimal string alignment distance of a and b, in
// bytes: insertions, deletions, substitutions and swaps of adjacent bytes,
// each one edit. It is what every "did you mean" of Orbit measures.
func EditDistance(a, b string) int {
	prev2 := make([]int, len(b)+1)
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range cur {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(b)]
}
