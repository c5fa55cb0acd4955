package console_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/internal/testkit"
)

// spawner finishes at once, leaving two detached runs of nap asleep.
const spawner = `schemaVersion: 2
kind: Job
metadata: {name: spawner}
spec:
  steps:
    - {id: one, spec: {type: deterministic, action: job.invoke, config: {job: nap, wait: false}}}
    - {id: two, spec: {type: deterministic, action: job.invoke, config: {job: nap, wait: false}}}
`

const nap = `schemaVersion: 2
kind: Job
metadata: {name: nap}
spec:
  max_active_runs: 5
  steps:
    - {id: sleep, spec: {type: deterministic, action: sleep, config: {ms: 60000}}}
`

// TestCancelTreeFromTheRunPage: the page of a finished run offers to cancel
// the runs below it; a cross-site POST is refused, a same-origin one
// cancels them as orbit run cancel --tree would, and with nothing live
// below the run a second one is a conflict.
func TestCancelTreeFromTheRunPage(t *testing.T) {
	t.Parallel()
	p, c, root, naps := napTree(t)
	require.Equal(t, events.StateSuccess, showRun(t, p, root).State)

	code, body := c.get(t, "/runs/"+root)
	require.Equal(t, http.StatusOK, code)
	assert.NotContains(t, body, `id="cancel"`, "the run itself has finished")
	assert.Contains(t, body, `action="/runs/`+root+`/cancel?tree=1"`)
	assert.Contains(t, body, `id="cancel-tree"`)

	cancelTree := "/runs/" + root + "/cancel?tree=1"
	assert.Equal(t, http.StatusForbidden, c.post(t, cancelTree, map[string]string{"Origin": "https://evil.example"}))
	assert.Equal(t, events.StateRunning, showRun(t, p, naps[0]).State, "a refused cancel changes nothing")
	assert.Equal(t, http.StatusSeeOther, c.post(t, cancelTree, c.fromPage()))
	for _, id := range naps {
		waitFor(t, "the nap to end", func() bool { return events.Terminal(showRun(t, p, id).State) })
		v := showRun(t, p, id)
		assert.Equal(t, events.StateCancelled, v.State)
		require.NotNil(t, v.Error)
		assert.True(t, strings.HasSuffix(v.Error.Message, ": from the console, as part of the tree cancel of "+root), v.Error.Message)
	}
	assert.Equal(t, http.StatusConflict, c.post(t, cancelTree, nil), "nothing is live below the run now")
}

// TestCancelTreeAnswersThePageWithItsOutcome: the page's script posts the
// cancel asking for JSON, and the answer says what came of it — how many
// runs were asked to cancel, or that nothing was live — since a finished
// run's page has no live updates to show it.
func TestCancelTreeAnswersThePageWithItsOutcome(t *testing.T) {
	t.Parallel()
	p, c, root, naps := napTree(t)
	post := func() (int, string, treeOutcome) { return postForJSON(t, c, "/runs/"+root+"/cancel?tree=1") }
	code, typ, o := post()
	require.Equal(t, http.StatusOK, code, "%+v", o)
	assert.Equal(t, "application/json", typ)
	assert.ElementsMatch(t, naps, o.Runs)
	assert.Equal(t, "Asked 2 runs below this one to cancel.", o.Message)
	for _, id := range naps {
		waitFor(t, "the nap to end", func() bool { return events.Terminal(showRun(t, p, id).State) })
	}

	code, _, o = post()
	assert.Equal(t, http.StatusConflict, code, "%+v", o)
	assert.Empty(t, o.Runs)
	assert.Equal(t, "Nothing to cancel: run "+root+" has already finished (success) and no run below it is live.", o.Message)
}

// TestPauseTreeFromTheRunPage: the page of a finished run offers to pause
// and unpause the runs below it; a pause of the tree holds both detached
// naps as orbit run pause --tree would, a second finds nothing left to
// pause, and an unpause of the tree lets both go on.
func TestPauseTreeFromTheRunPage(t *testing.T) {
	t.Parallel()
	p, c, root, naps := napTree(t)
	t.Cleanup(func() { p.Orbit("run", "cancel", "--tree", root) })

	_, body := c.get(t, "/runs/"+root)
	assert.Contains(t, body, `action="/runs/`+root+`/pause?tree=1"`)
	assert.Contains(t, body, `action="/runs/`+root+`/unpause?tree=1"`)
	_, body = c.get(t, "/runs/"+naps[0])
	assert.Contains(t, body, `id="pause-tree"`, "a live run that is not paused")
	assert.NotContains(t, body, `id="unpause-tree"`)

	post := func(path string) (int, treeOutcome) {
		code, _, o := postForJSON(t, c, path)
		return code, o
	}
	code, o := post("/runs/" + root + "/pause?tree=1")
	require.Equal(t, http.StatusOK, code, "%+v", o)
	assert.ElementsMatch(t, naps, o.Runs)
	assert.Equal(t, "Asked 2 runs below this one to pause.", o.Message)
	for _, id := range naps {
		assert.True(t, showRun(t, p, id).Paused, id)
	}
	_, body = c.get(t, "/runs/"+naps[0])
	assert.Contains(t, body, `id="unpause-tree"`)
	assert.NotContains(t, body, `id="pause-tree"`)
	code, o = post("/runs/" + root + "/pause?tree=1")
	assert.Equal(t, http.StatusConflict, code, "%+v", o)
	assert.Equal(t, "Nothing to pause: neither run "+root+" nor any live run below it is left to pause.", o.Message)

	code, o = post("/runs/" + root + "/unpause?tree=1")
	require.Equal(t, http.StatusOK, code, "%+v", o)
	assert.ElementsMatch(t, naps, o.Runs)
	for _, id := range naps {
		assert.False(t, showRun(t, p, id).Paused, id)
	}
}

// napTree serves a console on a project where a run of spawner has
// finished, leaving two detached runs of nap asleep; it returns the
// project, the console, the spawner run's id and the naps'.
func napTree(t *testing.T) (*testkit.Project, *site, string, []string) {
	t.Helper()
	p := testkit.NewProject(t)
	p.WriteFile(".orbit/jobs/spawner.yaml", spawner)
	p.WriteFile(".orbit/jobs/nap.yaml", nap)
	c := serveConsole(t, p)
	root := runJob(t, p, "spawner")
	waitFor(t, "two naps running", func() bool {
		kids := showRun(t, p, root).Children
		if len(kids) < 2 {
			return false
		}
		for _, id := range kids {
			if showRun(t, p, id).State != events.StateRunning {
				return false
			}
		}
		return true
	})
	return p, c, root, showRun(t, p, root).Children
}

// treeOutcome is the console's answer to a tree operation asked for JSON.
type treeOutcome struct {
	Runs    []string `json:"runs"`
	Message string   `json:"message"`
}

// postForJSON posts to path from the console's own origin asking for
// JSON, as the page's script does, and returns the status, the content
// type and the outcome.
func postForJSON(t *testing.T, c *site, path string) (int, string, treeOutcome) {
	t.Helper()
	req := c.request(t, http.MethodPost, path)
	req.Header.Set("Accept", "application/json")
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	req.Header.Set("Origin", c.URL)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	var o treeOutcome
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&o))
	return resp.StatusCode, resp.Header.Get("Content-Type"), o
}
