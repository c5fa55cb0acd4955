package assets

import (
	"fmt"
	"regexp"
	"strings"

	"gopkg.in/yaml.v3"
)

// The longest duration a setting may give: ten years, in each unit a
// setting uses. A time.Duration holds about 292 years, so a longer one
// overflows when a deadline or a backoff is computed from it (a wait that
// times out at once, a deadline in 1737); every timeout, backoff and wall
// clock is bounded here, at load, instead.
const (
	MaxDurationSeconds = 10 * 365 * 24 * 60 * 60
	MaxDurationMS      = MaxDurationSeconds * 1000
)

// maxDurationWords says what the bound is, for problems.
const maxDurationWords = "ten years"

// seconds reads an optional duration in seconds that must be ≥ low and
// at most MaxDurationSeconds; an absent field gives def.
func (d *decoder) seconds(m *mapping, key string, low, def int) int {
	return d.duration(m, key, low, def, MaxDurationSeconds)
}

// millis is seconds for a duration in milliseconds (MaxDurationMS).
func (d *decoder) millis(m *mapping, key string, low, def int) int {
	return d.duration(m, key, low, def, MaxDurationMS)
}

func (d *decoder) duration(m *mapping, key string, low, def int, most int64) int {
	n := m.get(key)
	if n == nil {
		return def
	}
	path := child(m.path, key)
	if d.overflows(n, path, low, most) {
		return def
	}
	v, ok := d.scalarInt(n, path)
	switch {
	case !ok:
		return def
	case v < low:
		d.addAt(n, path, fmt.Sprintf("must be ≥ %d", low))
	case int64(v) > most:
		d.addAt(n, path, durationProblem(most))
		return def
	}
	return v
}

// overflows reports, as a problem, an integer with too many digits to be
// one at all (YAML takes it for a float): past the bound most, or below
// low when negative.
func (d *decoder) overflows(n *yaml.Node, path string, low int, most int64) bool {
	r := resolve(n)
	if r.Kind != yaml.ScalarNode || r.Style != 0 || !digits.MatchString(r.Value) || fitsInt(r) {
		return false
	}
	if strings.HasPrefix(r.Value, "-") {
		d.addAt(n, path, fmt.Sprintf("must be ≥ %d", low))
	} else {
		d.addAt(n, path, durationProblem(most))
	}
	return true
}

// durationProblem is the problem of a duration past its bound.
func durationProblem(most int64) string {
	return fmt.Sprintf("must be at most %d (%s)", most, maxDurationWords)
}

// CheckDuration reports whether v, a duration in a unit whose bound is
// most (MaxDurationSeconds or MaxDurationMS), is within it: nil, or the
// problem's reason as an error, for durations read at run time.
func CheckDuration(v, most int64) error {
	if v > most {
		return fmt.Errorf("%s", durationProblem(most))
	}
	return nil
}

// digits is an integer written out, which YAML takes for a float when it
// has too many digits for an int.
var digits = regexp.MustCompile(`^[-+]?[0-9]+$`)

func fitsInt(n *yaml.Node) bool {
	var v int
	return n.Decode(&v) == nil
}
