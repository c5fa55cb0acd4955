package console_test

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/internal/testkit"
)

// spinJob is a loop of 5,000 iterations of one quick step: a run of
// 25,005 events.
const spinJob = `schemaVersion: 2
kind: Job
metadata: {name: spin}
spec:
  steps:
    - id: spin
      loop:
        max_iterations: 5000
        steps:
          - id: tick
            spec: {type: deterministic, action: echo, config: {n: "{{ iteration }}"}}
`

// href is the address of the first link of class class in a page, "" when
// there is none.
func href(body, class string) string {
	m := regexp.MustCompile(`<a class="` + class + `" href="([^"]+)"`).FindStringSubmatch(body)
	if m == nil {
		return ""
	}
	return strings.ReplaceAll(m[1], "&amp;", "&")
}

// seqs are the sequences of the events an events page lists.
func seqs(t *testing.T, body string) []uint64 {
	t.Helper()
	var out []uint64
	for _, m := range regexp.MustCompile(`<tr>\n<td>(\d+)</td>`).FindAllStringSubmatch(body, -1) {
		n, err := strconv.ParseUint(m[1], 10, 64)
		require.NoError(t, err)
		out = append(out, n)
	}
	return out
}

// TestABigRunIsBrowsable: the run of a 5,000-iteration loop has a run page
// of kilobytes, not megabytes, where the iterations are one summary row,
// listed 50 at a time below it to the last; its 25,005 events page to the
// end, a page at most 1,000 long, and filter by an iteration.
func TestABigRunIsBrowsable(t *testing.T) {
	t.Parallel()
	p := testkit.NewProject(t)
	// Relaxed: the test is about the run's size, not the disk's speed.
	p.WriteFile(".orbit/config.yaml", "durability: relaxed\n")
	writeJob(t, p, "spin", spinJob)
	c := serveConsole(t, p)
	id := startJob(t, p, "spin")
	deadline := time.Now().Add(5 * time.Minute)
	for !events.Terminal(showRun(t, p, id).State) {
		require.True(t, time.Now().Before(deadline), "the loop did not finish")
		time.Sleep(time.Second)
	}
	view := showRun(t, p, id)
	require.Equal(t, events.StateSuccess, view.State)
	require.Len(t, view.Steps, 5001)

	t.Run("run page", func(t *testing.T) {
		code, body := c.get(t, "/runs/"+id)
		require.Equal(t, http.StatusOK, code)
		assert.Less(t, len(body), 64<<10, "the page of a 5,000-iteration loop")
		assert.Contains(t, body, `<tr class="step" data-key="spin">`)
		assert.Contains(t, body, `<tr class="group" data-group="spin" data-kind="iterations">`)
		assert.Contains(t, body, `5000 iterations, 5000 steps: <span class="state success">5000 success</span>`)
		assert.NotContains(t, body, `data-key="spin/1/tick"`)
		assert.Contains(t, body, `<a class="expand" href="/runs/`+id+`/steps?under=spin">show iterations</a>`)
	})

	t.Run("iterations", func(t *testing.T) {
		code, body := c.get(t, "/runs/"+id+"/steps?under=spin")
		require.Equal(t, http.StatusOK, code)
		assert.Contains(t, body, "iterations 1–50 of 5000")
		assert.Equal(t, 50, strings.Count(body, `<tr class="step"`))
		assert.Contains(t, body, `data-key="spin/50/tick"`)
		assert.NotContains(t, body, `data-key="spin/51/tick"`)
		assert.Empty(t, href(body, "page prev"), "no previous page")
		code, next := c.get(t, href(body, "page next"))
		require.Equal(t, http.StatusOK, code)
		assert.Contains(t, next, "iterations 51–100 of 5000")
		code, body = c.get(t, href(body, "page last"))
		require.Equal(t, http.StatusOK, code)
		assert.Contains(t, body, "iterations 4951–5000 of 5000")
		assert.Contains(t, body, `data-key="spin/5000/tick"`)
		assert.NotEmpty(t, href(body, "page prev"))
		assert.Empty(t, href(body, "page next"))

		code, _ = c.get(t, "/runs/"+id+"/steps?under=spin/1/tick")
		assert.Equal(t, http.StatusNotFound, code, "a step that has no iterations")
		code, _ = c.get(t, "/runs/"+id+"/steps?under=spin&offset=-1")
		assert.Equal(t, http.StatusBadRequest, code)
	})

	t.Run("events", func(t *testing.T) {
		total := 0
		for _, line := range runEvents(t, p, id) {
			if regexp.MustCompile(`^\d+ `).MatchString(line) {
				total++
			}
		}
		require.Equal(t, 10005, total, "two events an iteration: its start and its step's one event (the orchestrator decides an echo)")
		code, body := c.get(t, "/runs/"+id+"/events")
		require.Equal(t, http.StatusOK, code)
		assert.Less(t, len(body), 1<<20)
		assert.Contains(t, body, fmt.Sprintf("1–200 of %d", total))
		assert.Contains(t, body, fmt.Sprintf("page 1 of %d", (total+199)/200))
		first := seqs(t, body)
		require.Len(t, first, 200)
		assert.Contains(t, body, "too many events to draw here")
		require.NotEmpty(t, href(body, "next"))

		code, second := c.get(t, href(body, "next"))
		require.Equal(t, http.StatusOK, code)
		assert.Greater(t, seqs(t, second)[0], first[199], "the next page goes on where the first ended")
		code, body = c.get(t, href(body, "last"))
		require.Equal(t, http.StatusOK, code)
		last := seqs(t, body)
		assert.Len(t, last, (total-1)%200+1)
		assert.Contains(t, body, "<td>"+events.RunFinished+"</td>", "the end of the run")
		assert.Empty(t, href(body, "next"))
		code, body = c.get(t, href(body, "prev"))
		require.Equal(t, http.StatusOK, code)
		before := seqs(t, body)
		require.Len(t, before, 200)
		assert.Less(t, before[199], last[0], "the previous page ends where the last began")

		lastPage := (total - 1) / 1000 // page counts from 0 in the query
		code, body = c.get(t, fmt.Sprintf("/runs/%s/events?size=1000&page=%d", id, lastPage))
		require.Equal(t, http.StatusOK, code)
		assert.Contains(t, body, fmt.Sprintf("%d–%d of %d", lastPage*1000+1, total, total))
		for _, bad := range []string{"size=5000", "size=0", "page=-1", "size=x"} {
			code, _ := c.get(t, "/runs/"+id+"/events?"+bad)
			assert.Equal(t, http.StatusBadRequest, code, bad)
		}
		code, _ = c.get(t, "/runs/"+id+"/events?page=1000")
		assert.Equal(t, http.StatusNotFound, code, "past the last page")

		code, body = c.get(t, "/runs/"+id+"/events?step=spin/4999")
		require.Equal(t, http.StatusOK, code)
		assert.Contains(t, body, fmt.Sprintf("1–1 of 1 matching, %d in all", total), "one iteration's events: its step's one event")
		assert.Contains(t, body, "<td>spin/4999/tick</td>")
		assert.NotContains(t, body, "<td>spin/499/tick</td>")
	})
}

// runEvents are the lines orbit run events prints for a run.
func runEvents(t *testing.T, p *testkit.Project, id string, args ...string) []string {
	t.Helper()
	r := p.Orbit(append([]string{"run", "events", id}, args...)...)
	require.Equal(t, 0, r.Code, r.String())
	return strings.Split(strings.TrimSpace(r.Stdout), "\n")
}

// TestLiveOfAnUnknownRunIs404AtOnce: the live stream of a run that is not
// there answers 404 at once, so that 64 of them leave the live updates of
// every page working; a finished run's stream ends at once.
func TestLiveOfAnUnknownRunIs404AtOnce(t *testing.T) {
	t.Parallel()
	p := testkit.NewProject(t)
	c := serveConsole(t, p)
	client := &http.Client{Timeout: 10 * time.Second}

	var wg sync.WaitGroup
	codes := make([]int, 64)
	for i := range codes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := client.Do(c.request(t, http.MethodGet, fmt.Sprintf("/runs/01NOSUCHRUN%015d/live?after=0", i)))
			if err != nil {
				codes[i] = -1
				return
			}
			resp.Body.Close()
			codes[i] = resp.StatusCode
		}()
	}
	wg.Wait()
	for i, code := range codes {
		assert.Equal(t, http.StatusNotFound, code, "stream %d", i)
	}

	done := runJob(t, p, "hello")
	resp, err := client.Do(c.request(t, http.MethodGet, "/runs/"+done+"/live?after=0"))
	require.NoError(t, err, "a finished run's stream ends")
	body := new(strings.Builder)
	_, err = bufio.NewReader(resp.Body).WriteTo(body)
	resp.Body.Close()
	require.NoError(t, err)
	assert.Contains(t, body.String(), "event: end\ndata: success\n")

	id := runningJob(t, p, "example_slow")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req := c.request(t, http.MethodGet, "/runs/"+id+"/live?after=0").WithContext(ctx)
	resp, err = http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode, "after 64 unknown runs, a live stream")
	assert.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	require.True(t, sc.Scan())
	assert.Equal(t, "event: run", sc.Text(), "the tree as it is now")
}

// TestTaskListLinksEveryTask: /tasks, linked from every page, lists the
// Groundhog tasks a page at a time, each linking to its page.
func TestTaskListLinksEveryTask(t *testing.T) {
	t.Parallel()
	p := testkit.NewProject(t)
	c := serveConsole(t, p)
	_, body := c.get(t, "/")
	assert.Contains(t, body, `<a href="/tasks">Tasks</a>`, "in the navigation")
	_, body = c.get(t, "/tasks")
	assert.Contains(t, body, "No tasks yet")

	repo := testkit.NewGitRepo(t, map[string]string{"README.md": "# x\n"})
	plan := p.WriteFile("plan.yaml", "checkpoints:\n  - id: one\n    spec: Do one thing.\n    success_criteria:\n      - {kind: file_exists, path: README.md}\n")
	var ids []string
	for i := range 3 {
		r := p.Orbit("task", "create", "--title", fmt.Sprintf("Task <b>%d</b>", i), "--plan", plan, "--workspace", repo)
		require.Equal(t, 0, r.Code, r.String())
		ids = append(ids, strings.TrimSpace(r.Stdout))
	}
	code, first := c.get(t, "/tasks?size=2")
	require.Equal(t, http.StatusOK, code)
	assert.Contains(t, first, "1–2 of 3 tasks")
	for _, id := range ids[:2] {
		assert.Contains(t, first, `<a href="/tasks/`+id+`">`+id+`</a>`)
	}
	assert.NotContains(t, first, `href="/tasks/`+ids[2]+`"`)
	assert.Contains(t, first, "Task &lt;b&gt;0&lt;/b&gt;", "titles are text")
	assert.Contains(t, first, `<a href="/tasks?page=1&amp;size=2">next →</a>`)
	_, second := c.get(t, "/tasks?page=1&size=2")
	assert.Contains(t, second, `<a href="/tasks/`+ids[2]+`">`+ids[2]+`</a>`)
	assert.Contains(t, second, "3–3 of 3 tasks")
	code, task := c.get(t, "/tasks/"+ids[2])
	assert.Equal(t, http.StatusOK, code)
	assert.Contains(t, task, "Task &lt;b&gt;2&lt;/b&gt;")
	for _, bad := range []string{"size=0", "size=201", "page=-1"} {
		code, _ := c.get(t, "/tasks?"+bad)
		assert.Equal(t, http.StatusBadRequest, code, bad)
	}
}

// TestA404EchoesAShortID: what a 404 repeats of a huge id or path is cut.
func TestA404EchoesAShortID(t *testing.T) {
	t.Parallel()
	p := testkit.NewProject(t)
	c := serveConsole(t, p)
	huge := strings.Repeat("A", 100<<10)
	for _, path := range []string{"/runs/" + huge, "/runs/" + huge + "/events", "/tasks/" + huge, "/" + huge, "/?job=" + huge} {
		code, body := c.get(t, path)
		assert.Contains(t, []int{http.StatusNotFound, http.StatusBadRequest}, code, path[:20])
		assert.Less(t, len(body), 4<<10, path[:20])
		assert.Regexp(t, `A{79}&#34;… \(10240\d bytes in all\)`, body, path[:20])
	}
}
