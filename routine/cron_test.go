package routine_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/routine"
)

func at(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t
}

func TestCronNext(t *testing.T) {
	for _, c := range []struct{ expr, from, want string }{
		{"* * * * *", "2026-11-28T16:03:59Z", "2026-11-28T16:04:00Z"},
		{"*/15 * * * *", "2026-11-28T16:03:59Z", "2026-11-28T16:15:00Z"},
		{"0 3 * * *", "2026-11-28T16:03:59Z", "2026-11-29T03:00:00Z"},
		{"*/2 * * * * *", "2026-11-28T16:03:59Z", "2026-11-28T16:04:00Z"},
		{"*/2 * * * * *", "2026-11-28T16:04:00Z", "2026-11-28T16:04:02Z"},
		{"0 0 29 2 *", "2026-11-28T16:03:59Z", "2028-02-29T00:00:00Z"},
		{"0 9 * * 1-5", "2026-11-28T16:03:59Z", "2026-11-30T09:00:00Z"}, // Saturday to Monday
		{"0 0 1 * 7", "2026-11-28T16:03:59Z", "2026-11-29T00:00:00Z"},   // the 1st or a Sunday
		{"@hourly", "2026-11-28T16:03:59Z", "2026-11-28T17:00:00Z"},
		{"5,10-12/2 * * * *", "2026-11-28T16:06:00Z", "2026-11-28T16:10:00Z"},
	} {
		s, err := routine.ParseCron(c.expr)
		require.NoError(t, err, c.expr)
		next, ok := s.Next(at(c.from))
		require.True(t, ok, c.expr)
		assert.Equal(t, at(c.want), next, c.expr)
	}
	never, err := routine.ParseCron("0 0 30 2 *")
	require.NoError(t, err)
	_, ok := never.Next(at("2026-11-28T16:03:59Z"))
	assert.False(t, ok, "February 30th never comes")
}

func TestCronRefusesWhatItCannotRead(t *testing.T) {
	for expr, want := range map[string]string{
		"* * * *":         "want 5 fields",
		"61 * * * *":      `minute: "61" is not a number from 0 to 59`,
		"* * * 13 *":      `month: "13" is not a number from 1 to 12`,
		"*/0 * * * *":     `minute: step "0"`,
		"5-2 * * * *":     `minute: range "5-2" runs backwards`,
		"* * * * * * *":   "got 7",
		"x * * * *":       `minute: "x"`,
		"* * * * * 0-8/2": `day of week: "8" is not a number from 0 to 7`,
		"@sometimes":      "want 5 fields",
	} {
		_, err := routine.ParseCron(expr)
		require.Error(t, err, expr)
		assert.Contains(t, err.Error(), want, expr)
	}
}
