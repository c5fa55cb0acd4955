// Package routine starts runs on a schedule (DESIGN §14): the routines of
// .orbit/routines/*.yaml, their cron schedules, and the scheduler every
// engine runs, which decides each tick once across engines and restarts.
package routine

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Schedule is a parsed cron expression. Times are in UTC.
type Schedule struct {
	// Seconds is set when the expression has six fields (seconds first);
	// a five-field one fires at second 0.
	Seconds                   bool
	second, minute, hour, dom uint64
	month, dow                uint64
	domAny, dowAny            bool
	text                      string
}

// String is the expression as written.
func (s *Schedule) String() string { return s.text }

var macros = map[string]string{
	"@yearly":   "0 0 1 1 *",
	"@annually": "0 0 1 1 *",
	"@monthly":  "0 0 1 * *",
	"@weekly":   "0 0 * * 0",
	"@daily":    "0 0 * * *",
	"@midnight": "0 0 * * *",
	"@hourly":   "0 * * * *",
}

type field struct {
	name     string
	low, top int
}

var fields = []field{
	{"second", 0, 59}, {"minute", 0, 59}, {"hour", 0, 23},
	{"day of month", 1, 31}, {"month", 1, 12}, {"day of week", 0, 7},
}

// ParseCron reads a cron expression: five fields (minute hour day-of-month
// month day-of-week), or six with seconds first, each `*`, a number, a
// range `a-b`, a step `*/n` or `a-b/n`, or a comma list of those; or one
// of @yearly, @monthly, @weekly, @daily, @hourly. Day of week 7 is Sunday,
// as 0 is. As in cron, when both day fields are restricted a day matching
// either fires.
func ParseCron(expr string) (*Schedule, error) {
	text := strings.TrimSpace(expr)
	if m, ok := macros[text]; ok {
		expr = m
	}
	parts := strings.Fields(expr)
	s := &Schedule{text: text}
	switch len(parts) {
	case 5:
		parts = append([]string{"0"}, parts...)
	case 6:
		s.Seconds = true
	default:
		return nil, fmt.Errorf("cron %q: want 5 fields (minute hour day-of-month month day-of-week) or 6 (seconds first), got %d", text, len(parts))
	}
	sets := make([]uint64, 6)
	for i, p := range parts {
		set, err := parseField(p, fields[i])
		if err != nil {
			return nil, fmt.Errorf("cron %q: %w", text, err)
		}
		sets[i] = set
	}
	s.second, s.minute, s.hour, s.dom, s.month, s.dow = sets[0], sets[1], sets[2], sets[3], sets[4], sets[5]
	if s.dow&(1<<7) != 0 {
		s.dow |= 1
	}
	s.domAny = parts[3] == "*" || parts[3] == "?"
	s.dowAny = parts[5] == "*" || parts[5] == "?"
	return s, nil
}

func parseField(p string, f field) (uint64, error) {
	var set uint64
	for _, item := range strings.Split(p, ",") {
		lo, hi, step := f.low, f.top, 1
		rng, stepText, hasStep := strings.Cut(item, "/")
		if hasStep {
			n, err := strconv.Atoi(stepText)
			if err != nil || n < 1 || n > f.top+1 {
				return 0, fmt.Errorf("%s: step %q is not a number from 1 to %d", f.name, stepText, f.top+1)
			}
			step = n
		}
		switch {
		case rng == "*" || rng == "?":
		case strings.Contains(rng, "-"):
			a, b, _ := strings.Cut(rng, "-")
			var err error
			if lo, err = bound(a, f); err != nil {
				return 0, err
			}
			if hi, err = bound(b, f); err != nil {
				return 0, err
			}
			if lo > hi {
				return 0, fmt.Errorf("%s: range %q runs backwards", f.name, rng)
			}
		default:
			n, err := bound(rng, f)
			if err != nil {
				return 0, err
			}
			lo = n
			if !hasStep {
				hi = n
			}
		}
		for v := lo; v <= hi; v += step {
			set |= 1 << uint(v)
		}
	}
	return set, nil
}

func bound(s string, f field) (int, error) {
	n, err := strconv.Atoi(s)
	if err != nil || n < f.low || n > f.top {
		return 0, fmt.Errorf("%s: %q is not a number from %d to %d", f.name, s, f.low, f.top)
	}
	return n, nil
}

// searchYears bounds Next: a schedule that matches no time in this many
// years (February 30th) never fires.
const searchYears = 5

// Next is the first time the schedule fires strictly after t, and false
// when it never fires.
func (s *Schedule) Next(t time.Time) (time.Time, bool) {
	t = t.UTC()
	if s.Seconds {
		t = t.Truncate(time.Second).Add(time.Second)
	} else {
		t = t.Truncate(time.Minute).Add(time.Minute)
	}
	end := t.AddDate(searchYears, 0, 0)
	for t.Before(end) {
		switch {
		case s.month&(1<<uint(t.Month())) == 0:
			t = time.Date(t.Year(), t.Month()+1, 1, 0, 0, 0, 0, time.UTC)
		case !s.dayMatches(t):
			t = time.Date(t.Year(), t.Month(), t.Day()+1, 0, 0, 0, 0, time.UTC)
		case s.hour&(1<<uint(t.Hour())) == 0:
			t = t.Truncate(time.Hour).Add(time.Hour)
		case s.minute&(1<<uint(t.Minute())) == 0:
			t = t.Truncate(time.Minute).Add(time.Minute)
		case s.second&(1<<uint(t.Second())) == 0:
			t = t.Add(time.Second)
		default:
			return t, true
		}
	}
	return time.Time{}, false
}

func (s *Schedule) dayMatches(t time.Time) bool {
	dom := s.dom&(1<<uint(t.Day())) != 0
	dow := s.dow&(1<<uint(t.Weekday())) != 0
	switch {
	case s.domAny && s.dowAny:
		return true
	case s.domAny:
		return dow
	case s.dowAny:
		return dom
	}
	return dom || dow
}
