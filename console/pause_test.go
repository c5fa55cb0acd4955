package console_test

import (
	"encoding/json"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/internal/testkit"
	"github.com/orbitrun/orbit/routine"
)

// TestPauseButtonsRoutinesPageAndMetrics: a running run's page has a
// pause button, whose same-origin POST pauses it; the page then says
// paused and has an unpause button, which lets it go on; the routines page
// lists a routine with its schedule and counts, and /metrics has the
// routine's and the paused runs' series.
func TestPauseButtonsRoutinesPageAndMetrics(t *testing.T) {
	t.Parallel()
	p := testkit.NewProject(t)
	p.WriteFile(".orbit/routines/hourly.yaml", "schemaVersion: 2\nkind: Routine\nmetadata: {name: hourly}\nspec:\n  trigger: {cron: '@hourly'}\n  target: job:example_slow\n")
	c := serveConsole(t, p)
	id := runningJob(t, p, "example_slow")

	_, body := c.get(t, "/runs/"+id)
	assert.Contains(t, body, `id="pause"`)
	assert.NotContains(t, body, `id="unpause"`)
	require.Equal(t, http.StatusSeeOther, c.post(t, "/runs/"+id+"/pause", c.fromPage()))
	assert.True(t, showRun(t, p, id).Paused)
	_, body = c.get(t, "/runs/"+id)
	assert.Contains(t, body, `id="unpause"`)
	assert.Contains(t, body, `id="run-paused"`)

	_, metrics := c.get(t, "/metrics")
	assert.Contains(t, metrics, `orbit_runs_paused{job="example_slow"} 1`)
	assert.Contains(t, metrics, `orbit_routine_paused{routine="hourly"} 0`)
	assert.Contains(t, metrics, `orbit_routine_fired_total{routine="hourly"} 0`)
	assert.Contains(t, metrics, `orbit_routine_next_fire_timestamp_seconds{routine="hourly"} `)

	require.Equal(t, http.StatusSeeOther, c.post(t, "/runs/"+id+"/unpause", c.fromPage()))
	assert.False(t, showRun(t, p, id).Paused)
	_, body = c.get(t, "/runs/"+id)
	assert.Contains(t, body, `id="pause-now"`)
	require.Equal(t, http.StatusSeeOther, c.post(t, "/runs/"+id+"/pause?now=1", c.fromPage()))
	assert.True(t, showRun(t, p, id).Paused)
	r := p.Orbit("run", "events", "--json", id)
	require.Equal(t, 0, r.Code, r.String())
	var evs []events.Event
	require.NoError(t, json.Unmarshal([]byte(r.Stdout), &evs))
	var pauses []events.RunPausedData
	for _, ev := range evs {
		if ev.Type == events.RunPaused {
			var d events.RunPausedData
			require.NoError(t, ev.Decode(&d))
			pauses = append(pauses, d)
		}
	}
	require.Len(t, pauses, 2)
	assert.False(t, pauses[0].Now)
	assert.True(t, pauses[1].Now, "the console's Pause now")

	code, page := c.get(t, "/routines")
	require.Equal(t, http.StatusOK, code)
	assert.Contains(t, page, `data-routine="hourly"`)
	assert.Contains(t, page, "job:example_slow")
	assert.Contains(t, page, "@hourly")
	assert.Contains(t, page, `<td class="retries">-</td>`, "no retries in its policy")
	require.Equal(t, 0, p.Orbit("run", "cancel", id).Code)
}

// TestJobPageShowsPausedWithItsButtonAndMetrics: the job page's same-origin
// POST pauses a job, whose page then says paused (by whom, why) with an
// unpause button, and /metrics counts it; unpaused, it is active again.
func TestJobPageShowsPausedWithItsButtonAndMetrics(t *testing.T) {
	t.Parallel()
	p := testkit.NewProject(t)
	c := serveConsole(t, p)
	code, body := c.get(t, "/jobs/example_slow")
	require.Equal(t, http.StatusOK, code)
	assert.Contains(t, body, `id="job-active"`)
	assert.Contains(t, body, `id="pause-job"`)
	_, metrics := c.get(t, "/metrics")
	assert.Contains(t, metrics, "orbit_jobs_paused 0")

	require.Equal(t, http.StatusSeeOther, c.post(t, "/jobs/example_slow/pause", c.fromPage()))
	_, body = c.get(t, "/jobs/example_slow")
	assert.Contains(t, body, `id="job-paused"`)
	assert.Contains(t, body, `id="unpause-job"`)
	assert.Contains(t, body, "from the console")
	_, metrics = c.get(t, "/metrics")
	assert.Contains(t, metrics, "orbit_jobs_paused 1")
	list := p.Orbit("job", "list")
	assert.Contains(t, list.Stdout, "[paused]")
	assert.Equal(t, http.StatusNotFound, c.post(t, "/jobs/nosuch/pause", c.fromPage()), "no such job")

	require.Equal(t, http.StatusSeeOther, c.post(t, "/jobs/example_slow/unpause", c.fromPage()))
	_, body = c.get(t, "/jobs/example_slow")
	assert.Contains(t, body, `id="job-active"`)
}

// TestRoutinesPageAndMetricsSayLastAndNextFireAndSkipped: a routine every
// two seconds whose first run lasts a minute (overlap: forbid) fires once
// and then skips its ticks; /metrics has its last fire (that run's tick),
// its next fire (the coming tick), one fire and the skipped ticks, and the
// Routines page says the same, linking the run.
func TestRoutinesPageAndMetricsSayLastAndNextFireAndSkipped(t *testing.T) {
	t.Parallel()
	p := testkit.NewProject(t)
	p.WriteFile(".orbit/routines/busy.yaml", "schemaVersion: 2\nkind: Routine\nmetadata: {name: busy}\nspec:\n  trigger: {cron: '*/2 * * * * *'}\n  target: job:example_slow\n  policy: {overlap: forbid}\n")
	c := serveConsole(t, p)
	var st routine.Status
	waitFor(t, "a fire and two skipped ticks", func() bool {
		r := p.Orbit("routine", "show", "busy", "--json")
		require.Equal(t, 0, r.Code, r.String())
		require.NoError(t, json.Unmarshal([]byte(r.Stdout), &st))
		return st.State.Fired == 1 && st.State.Skipped >= 2
	})
	require.NotEmpty(t, st.State.LastRun)

	before := time.Now()
	_, metrics := c.get(t, "/metrics")
	series := func(name string) float64 {
		t.Helper()
		m := regexp.MustCompile(`(?m)^` + name + `\{routine="busy"\} (\S+)$`).FindStringSubmatch(metrics)
		require.NotNil(t, m, "%s in:\n%s", name, metrics)
		v, err := strconv.ParseFloat(m[1], 64)
		require.NoError(t, err)
		return v
	}
	assert.Equal(t, float64(st.State.LastFire.Unix()), series("orbit_routine_last_fire_timestamp_seconds"), "the tick of the run it fired")
	next := series("orbit_routine_next_fire_timestamp_seconds")
	assert.Greater(t, next, float64(before.Unix())-1, "the coming tick")
	assert.LessOrEqual(t, next, float64(time.Now().Unix())+2)
	assert.Equal(t, 1.0, series("orbit_routine_fired_total"))
	skipped := series("orbit_routine_skipped_total")
	assert.GreaterOrEqual(t, skipped, float64(st.State.Skipped))
	assert.Equal(t, 0.0, series("orbit_routine_paused"))

	_, page := c.get(t, "/routines")
	row := page[strings.Index(page, `data-routine="busy"`):]
	row = row[:strings.Index(row, "</tr>")]
	assert.Contains(t, row, `<a href="/runs/`+st.State.LastRun+`">`, "the last fire links its run")
	assert.Contains(t, row, `<td class="fired">1</td>`)
	assert.Regexp(t, `<td class="skipped">[1-9][0-9]*</td>`, row)
	assert.Contains(t, row, "skipped (overlap)")
	assert.Regexp(t, `<td class="next">\d{4}-\d\d-\d\d [0-9:]+Z</td>`, row)
	require.Equal(t, 0, p.Orbit("run", "cancel", st.State.LastRun).Code)
}
