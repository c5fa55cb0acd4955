package console_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image/png"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/internal/testkit"
)

// chromiumPath is where Debian's chromium package (make chromium) puts the
// browser.
const chromiumPath = "/usr/bin/chromium"

// screenshotCap bounds a screenshot kept in docs/.
const screenshotCap = 200 << 10

// browser starts a headless Chromium for the test, with opts besides the
// usual, and returns a tab. The test is skipped only when Chromium is
// missing and CI is unset: on CI a missing browser fails it.
func browser(t *testing.T, opts ...chromedp.ExecAllocatorOption) context.Context {
	t.Helper()
	if _, err := os.Stat(chromiumPath); err != nil {
		if os.Getenv("CI") == "" {
			t.Skipf("no %s (make chromium installs it)", chromiumPath)
		}
		t.Fatalf("CI is set and %s is missing: %v", chromiumPath, err)
	}
	actx, cancel := chromedp.NewExecAllocator(context.Background(), append([]chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chromiumPath),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1100, 1000),
	}, opts...)...)
	t.Cleanup(cancel)
	ctx, cancelTab := chromedp.NewContext(actx)
	t.Cleanup(cancelTab)
	ctx, cancelTime := context.WithTimeout(ctx, 90*time.Second)
	t.Cleanup(cancelTime)
	require.NoError(t, chromedp.Do(ctx), "starting chromium")
	return ctx
}

// login opens the login URL orbit serve printed, as its owner would, and
// waits for the runs page it leads to.
func login(t *testing.T, ctx context.Context, c *site) {
	t.Helper()
	require.NotEmpty(t, c.Login)
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(c.Login), chromedp.WaitVisible(chromedp.CSS(`h1`))))
	assert.Equal(t, c.URL+"/", eval[string](t, ctx, `location.href`), "the token is gone from the address")
}

// eval evaluates a JavaScript expression in the tab.
func eval[T any](t *testing.T, ctx context.Context, expr string) T {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	require.NoError(t, err, expr)
	return v
}

// screenshot captures the viewport as PNG, checks that it is small enough
// for the docs and, with ORBIT_SCREENSHOTS=1 (make screenshots), writes
// it to docs/<name>.
func screenshot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	data, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	require.NoError(t, err)
	img, err := png.Decode(bytes.NewReader(data))
	require.NoError(t, err, "a PNG")
	assert.Equal(t, 1100, img.Bounds().Dx(), "the window's width")
	require.Less(t, len(data), screenshotCap, "%s is too big for the docs", name)
	if os.Getenv("ORBIT_SCREENSHOTS") != "" {
		require.NoError(t, os.WriteFile(filepath.Join(testkit.ModuleRoot(t), "docs", name), data, 0o644))
	}
}

// TestBrowserRunPages: in a real browser, the runs list shows a finished
// run, and the pages of example_parallel and example_fan_out every step
// with the state orbit run show gives; a <script> a step printed is text.
func TestBrowserRunPages(t *testing.T) {
	t.Parallel()
	ctx := browser(t)
	p := testkit.NewProject(t)
	c := serveConsole(t, p)
	login(t, ctx, c)

	parallel := runJob(t, p, "example_parallel")
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(c.URL+"/"),
		chromedp.WaitVisible(chromedp.CSS(`a[href="/runs/`+parallel+`"]`))))
	assert.Equal(t, showRun(t, p, parallel).State,
		eval[string](t, ctx, `document.querySelector('a[href="/runs/`+parallel+`"]').closest("tr").querySelector(".state").textContent`))

	for _, id := range []string{parallel, runJob(t, p, "example_fan_out")} {
		view := showRun(t, p, id)
		require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(c.URL+"/runs/"+id), chromedp.WaitVisible(chromedp.CSS(`table.steps`))))
		var shown map[string]string
		require.NoError(t, json.Unmarshal([]byte(eval[string](t, ctx, `JSON.stringify(Object.fromEntries(
			[...document.querySelectorAll("tr.step")].map(r => [r.dataset.key, r.querySelector(".state").textContent])))`)), &shown))
		want := map[string]string{}
		for _, s := range view.Steps {
			want[s.Key] = s.State
		}
		assert.Equal(t, want, shown, view.Job)
		if view.Job == "example_fan_out" {
			screenshot(t, ctx, "console-run.png")
		}
	}

	writeJob(t, p, "shouty", escapeJob)
	shouty := runJob(t, p, "shouty")
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(c.URL+"/runs/"+shouty), chromedp.WaitVisible(chromedp.CSS(`.tail pre`))))
	assert.Equal(t, "<script>alert('owned')</script>\n", eval[string](t, ctx, `document.querySelector(".tail pre").textContent`))
	assert.Equal(t, 1, eval[int](t, ctx, `document.scripts.length`), "only the console's own script")
}

// TestBrowserCancelIsLive: a running example_slow shows running, and after
// the cancel button turns cancelled on the same page, without a reload.
func TestBrowserCancelIsLive(t *testing.T) {
	t.Parallel()
	ctx := browser(t)
	p := testkit.NewProject(t)
	c := serveConsole(t, p)
	login(t, ctx, c)
	id := runningJob(t, p, "example_slow")

	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(c.URL+"/runs/"+id), chromedp.WaitVisible(chromedp.CSS(`#cancel`))))
	assert.Equal(t, "running", eval[string](t, ctx, `document.getElementById("run-state").textContent`))
	assert.Equal(t, "running", eval[string](t, ctx, `document.querySelector('tr.step[data-key="nap"] .state').textContent`))
	eval[bool](t, ctx, `window.samePage = true`)
	require.NoError(t, chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`#cancel`))))
	_, err := chromedp.Run(ctx, chromedp.Poll[bool](`document.getElementById("run-state").textContent === "cancelled"`,
		chromedp.WithPollingTimeout(30*time.Second)))
	require.NoError(t, err, "the page shows the run cancelled")
	assert.True(t, eval[bool](t, ctx, `window.samePage === true`), "without a reload")
	assert.Equal(t, "cancelled", eval[string](t, ctx, `document.querySelector('tr.step[data-key="nap"] .state').textContent`))
	assert.False(t, eval[bool](t, ctx, `!!document.getElementById("cancel")`), "no cancel button on a finished run")
	assert.Equal(t, events.StateCancelled, showRun(t, p, id).State)
}

// TestBrowserCancelTreeShowsItsOutcome: on the page of a finished run,
// which has no live updates, the "cancel every live run below it" button
// says beside it what came of the click: how many runs it asked to
// cancel, then, clicked again, that nothing was live.
func TestBrowserCancelTreeShowsItsOutcome(t *testing.T) {
	t.Parallel()
	ctx := browser(t)
	p := testkit.NewProject(t)
	p.WriteFile(".orbit/jobs/spawner.yaml", spawner)
	p.WriteFile(".orbit/jobs/nap.yaml", nap)
	c := serveConsole(t, p)
	login(t, ctx, c)
	root := runJob(t, p, "spawner")
	waitFor(t, "two naps running", func() bool {
		kids := showRun(t, p, root).Children
		running := 0
		for _, id := range kids {
			if showRun(t, p, id).State == events.StateRunning {
				running++
			}
		}
		return running == 2
	})

	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(c.URL+"/runs/"+root), chromedp.WaitVisible(chromedp.CSS(`#cancel-tree`))))
	assert.Equal(t, "no", eval[string](t, ctx, `document.getElementById("run").dataset.live`), "a finished run's page is not live")
	eval[bool](t, ctx, `window.samePage = true`)
	outcome := func(want string) {
		t.Helper()
		_, err := chromedp.Run(ctx, chromedp.Poll[bool](`(document.querySelector("output.outcome") || {}).textContent === `+strconv.Quote(want),
			chromedp.WithPollingTimeout(30*time.Second)))
		require.NoError(t, err, "the page says %q; it says %q", want, eval[string](t, ctx, `(document.querySelector("output.outcome") || {}).textContent || ""`))
	}
	require.NoError(t, chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`#cancel-tree`))))
	outcome("Asked 2 runs below this one to cancel.")
	for _, id := range showRun(t, p, root).Children {
		waitFor(t, "the nap to end", func() bool { return events.Terminal(showRun(t, p, id).State) })
	}
	assert.False(t, eval[bool](t, ctx, `document.getElementById("cancel-tree").disabled`), "the button may be clicked again")
	require.NoError(t, chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`#cancel-tree`))))
	outcome("Nothing to cancel: run " + root + " has already finished (success) and no run below it is live.")
	assert.True(t, eval[bool](t, ctx, `window.samePage === true`), "without leaving the page")
}

// TestBrowserTaskPage: after the demo plan, the task page shows both
// checkpoints, the rewound attempt with its failing criterion and its
// diff.
func TestBrowserTaskPage(t *testing.T) {
	t.Parallel()
	ctx := browser(t)
	c, task := groundhogProject(t)
	login(t, ctx, c)
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(c.URL+"/tasks/"+task), chromedp.WaitVisible(chromedp.CSS(`#checkpoint-test`))))
	assert.True(t, eval[bool](t, ctx, `!!document.getElementById("checkpoint-greet")`))
	rewound := `document.querySelector('.attempt[data-checkpoint="test"][data-attempt="1"]')`
	assert.Equal(t, "rewound", eval[string](t, ctx, rewound+`.querySelector("h4 .state").textContent`))
	failing := eval[string](t, ctx, rewound+`.querySelector("tr.criterion .state.fail").closest("tr").textContent`)
	assert.Contains(t, failing, "command")
	assert.Contains(t, failing, "sh test.sh")
	diff := eval[string](t, ctx, rewound+`.querySelector(".diff pre").textContent`)
	assert.Contains(t, diff, "+++ b/test.sh")
	assert.Contains(t, diff, `+[ "$(sh greet.sh world)" = 'Hello, world' ]`)
	eval[bool](t, ctx, `document.getElementById("checkpoint-test").scrollIntoView({block: "start"}) === undefined`)
	screenshot(t, ctx, "console-groundhog.png")
}

// asNobody makes the browser run as the user nobody, in a profile and home
// of its own, when the tests run as root; otherwise it is a second browser
// of the same user that has never logged in. It says which.
func asNobody(t *testing.T) ([]chromedp.ExecAllocatorOption, string) {
	t.Helper()
	if os.Geteuid() != 0 {
		return nil, "a browser that has not logged in"
	}
	home := t.TempDir()
	require.NoError(t, os.Chmod(filepath.Dir(home), 0o755))
	require.NoError(t, os.Chmod(home, 0o777))
	profile := filepath.Join(home, "profile")
	require.NoError(t, os.Mkdir(profile, 0o700))
	require.NoError(t, os.Chmod(profile, 0o777))
	return []chromedp.ExecAllocatorOption{
		chromedp.UserDataDir(profile),
		chromedp.Env("HOME=" + home),
		chromedp.ModifyCmdFunc(func(cmd *exec.Cmd) {
			cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL,
				Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
		}),
	}, "another local user (nobody)"
}

// TestBrowserOnlyTheOwnerGetsIn: in a real browser, the owner's login URL
// leads to the runs page without the token in the address and leaves a
// cookie the page's script cannot read, which takes the owner to a run's
// page and /metrics thereafter; another local user's browser gets the
// login page for every address and reads nothing; a name rebound to
// 127.0.0.1 (DNS rebinding) gets 421 even in the owner's browser.
func TestBrowserOnlyTheOwnerGetsIn(t *testing.T) {
	t.Parallel()
	p := testkit.NewProject(t)
	c := serveConsole(t, p)
	_, port, err := net.SplitHostPort(strings.TrimPrefix(c.URL, "http://"))
	require.NoError(t, err)
	id := runJob(t, p, "example_parallel")

	owner := browser(t, chromedp.Flag("host-resolver-rules", "MAP rebound.example.test 127.0.0.1"))
	login(t, owner, c)
	assert.Equal(t, "Runs", eval[string](t, owner, `document.querySelector("h1").textContent`))
	assert.Empty(t, eval[string](t, owner, `document.cookie`), "the cookie is HttpOnly")
	require.NoError(t, chromedp.Do(owner, chromedp.Navigate(c.URL+"/runs/"+id), chromedp.WaitVisible(chromedp.CSS(`table.steps`))))
	assert.Equal(t, "success", eval[string](t, owner, `document.getElementById("run-state").textContent`))
	status := func(ctx context.Context, path string) int {
		t.Helper()
		v, err := chromedp.Run(ctx, chromedp.Evaluate[int](`fetch(`+strconv.Quote(path)+`).then(r => r.status)`, chromedp.EvalAwaitPromise))
		require.NoError(t, err, path)
		return v
	}
	assert.Equal(t, http.StatusOK, status(owner, "/metrics"), "the owner's cookie on /metrics")

	require.NoError(t, chromedp.Do(owner, chromedp.Navigate("http://rebound.example.test:"+port+"/runs/"+id),
		chromedp.WaitReady(chromedp.CSS(`body`))))
	assert.Contains(t, eval[string](t, owner, `document.body.textContent`), "does not answer to the host")
	assert.NotContains(t, eval[string](t, owner, `document.body.textContent`), "example_parallel")
	assert.Equal(t, http.StatusMisdirectedRequest, status(owner, "/metrics"), "a rebound page's own requests")

	opts, who := asNobody(t)
	other := browser(t, opts...)
	if os.Geteuid() == 0 {
		status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", chromedp.FromContext(other).Browser.Process().Pid))
		require.NoError(t, err)
		assert.Regexp(t, `(?m)^Uid:\s+65534\s`, string(status), "the other browser runs as nobody")
	}
	for _, path := range []string{"/", "/runs/" + id, "/runs/" + id + "/events", "/tasks"} {
		require.NoError(t, chromedp.Do(other, chromedp.Navigate(c.URL+path), chromedp.WaitVisible(chromedp.CSS(`h1`))), who)
		assert.Equal(t, "Log in", eval[string](t, other, `document.querySelector("h1").textContent`), "%s: %s", who, path)
		assert.NotContains(t, eval[string](t, other, `document.body.textContent`), id, who)
	}
	assert.Equal(t, http.StatusUnauthorized, status(other, "/metrics"), who)
	require.NoError(t, chromedp.Do(other, chromedp.Navigate(c.URL+"/?token=guess"), chromedp.WaitVisible(chromedp.CSS(`h1`))))
	assert.Contains(t, eval[string](t, other, `document.body.textContent`), "That is not this console's token.", who)
}

// collapsedJob loops twelve times and then waits for the signal go: its
// loop is summarised while the run still runs.
const collapsedJob = `schemaVersion: 2
kind: Job
metadata: {name: collapsed}
spec:
  steps:
    - id: spin
      loop:
        max_iterations: 12
        steps:
          - id: tick
            spec: {type: deterministic, action: echo, config: {n: "{{ iteration }}"}}
    - id: gate
      wait: {signal: go, timeout_seconds: 600}
`

// TestBrowserCollapsedLoopIsLive: a running run's loop of twelve
// iterations is one summary row; "show" lists them under it without
// leaving the page, and they stay listed when the run's end arrives live.
func TestBrowserCollapsedLoopIsLive(t *testing.T) {
	t.Parallel()
	ctx := browser(t)
	p := testkit.NewProject(t)
	writeJob(t, p, "collapsed", collapsedJob)
	c := serveConsole(t, p)
	login(t, ctx, c)
	id := startJob(t, p, "collapsed")
	waitFor(t, "the gate", func() bool {
		for _, s := range showRun(t, p, id).Steps {
			if s.Key == "gate" {
				return true
			}
		}
		return false
	})

	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(c.URL+"/runs/"+id), chromedp.WaitVisible(chromedp.CSS(`tr.group[data-group="spin"]`))))
	assert.Equal(t, "running", eval[string](t, ctx, `document.getElementById("run-state").textContent`))
	assert.Zero(t, eval[int](t, ctx, `document.querySelectorAll('tr.step[data-key^="spin/"]').length`), "the iterations are summarised")
	eval[bool](t, ctx, `window.samePage = true`)
	require.NoError(t, chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`tr.group[data-group="spin"] a.expand`)),
		chromedp.WaitVisible(chromedp.CSS(`tr.step[data-key="spin/12/tick"]`))))
	assert.Equal(t, 12, eval[int](t, ctx, `document.querySelectorAll('tr.group-body tr.step[data-key^="spin/"]').length`))
	assert.Equal(t, "hide", eval[string](t, ctx, `document.querySelector('tr.group[data-group="spin"] a.expand').textContent`))

	r := p.Orbit("run", "signal", id, "go")
	require.Equal(t, 0, r.Code, r.String())
	_, err := chromedp.Run(ctx, chromedp.Poll[bool](`document.getElementById("run-state").textContent === "success"`,
		chromedp.WithPollingTimeout(30*time.Second)))
	require.NoError(t, err, "the page shows the run's end")
	assert.True(t, eval[bool](t, ctx, `window.samePage === true`), "without a reload")
	_, err = chromedp.Run(ctx, chromedp.Poll[bool](`document.querySelectorAll('tr.group-body tr.step[data-key^="spin/"]').length === 12`,
		chromedp.WithPollingTimeout(10*time.Second)))
	require.NoError(t, err, "the iterations stay listed after the live update")
	assert.Equal(t, "success", eval[string](t, ctx, `document.querySelector('tr.step[data-key="gate"] .state').textContent`))
	screenshot(t, ctx, "console-loop.png")
}
