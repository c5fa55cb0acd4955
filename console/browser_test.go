package console_test

import (
	"bytes"
	"context"
	"encoding/json"
	"image/png"
	"os"
	"path/filepath"
	"strings"
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

// browser starts a headless Chromium for the test and returns a tab. The
// test is skipped only when Chromium is missing and CI is unset: on CI a
// missing browser fails it.
func browser(t *testing.T) context.Context {
	t.Helper()
	if _, err := os.Stat(chromiumPath); err != nil {
		if os.Getenv("CI") == "" {
			t.Skipf("no %s (make chromium installs it)", chromiumPath)
		}
		t.Fatalf("CI is set and %s is missing: %v", chromiumPath, err)
	}
	actx, cancel := chromedp.NewExecAllocator(context.Background(),
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
	)
	t.Cleanup(cancel)
	ctx, cancelTab := chromedp.NewContext(actx)
	t.Cleanup(cancelTab)
	ctx, cancelTime := context.WithTimeout(ctx, 90*time.Second)
	t.Cleanup(cancelTime)
	require.NoError(t, chromedp.Do(ctx), "starting chromium")
	return ctx
}

// eval evaluates a JavaScript expression in the tab.
func eval[T any](t *testing.T, ctx context.Context, expr string) T {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	require.NoError(t, err, expr)
	return v
}

// screenshot captures the viewport as PNG, checks that it is small enough
// for the README and, with ORBIT_SCREENSHOTS=1 (make screenshots), writes
// it to docs/<name>.
func screenshot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	data, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	require.NoError(t, err)
	img, err := png.Decode(bytes.NewReader(data))
	require.NoError(t, err, "a PNG")
	assert.Equal(t, 1100, img.Bounds().Dx(), "the window's width")
	require.Less(t, len(data), screenshotCap, "%s is too big for the README", name)
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
	url := serveConsole(t, p)

	parallel := runJob(t, p, "example_parallel")
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(url+"/"),
		chromedp.WaitVisible(chromedp.CSS(`a[href="/runs/`+parallel+`"]`))))
	assert.Equal(t, showRun(t, p, parallel).State,
		eval[string](t, ctx, `document.querySelector('a[href="/runs/`+parallel+`"]').closest("tr").querySelector(".state").textContent`))

	for _, id := range []string{parallel, runJob(t, p, "example_fan_out")} {
		view := showRun(t, p, id)
		require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(url+"/runs/"+id), chromedp.WaitVisible(chromedp.CSS(`table.steps`))))
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
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(url+"/runs/"+shouty), chromedp.WaitVisible(chromedp.CSS(`.tail pre`))))
	assert.Equal(t, "<script>alert('owned')</script>\n", eval[string](t, ctx, `document.querySelector(".tail pre").textContent`))
	assert.Equal(t, 1, eval[int](t, ctx, `document.scripts.length`), "only the console's own script")
}

// TestBrowserCancelIsLive: a running example_slow shows running, and after
// the cancel button turns cancelled on the same page, without a reload.
func TestBrowserCancelIsLive(t *testing.T) {
	t.Parallel()
	ctx := browser(t)
	p := testkit.NewProject(t)
	url := serveConsole(t, p)
	r := p.Orbit("job", "run", "example_slow", "--detach")
	require.Equal(t, 0, r.Code, r.String())
	id := strings.TrimSpace(r.Stdout)
	waitFor(t, "the run to start", func() bool { return showRun(t, p, id).State == events.StateRunning })

	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(url+"/runs/"+id), chromedp.WaitVisible(chromedp.CSS(`#cancel`))))
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

// TestBrowserTaskPage: after the demo plan, the task page shows both
// checkpoints, the rewound attempt with its failing criterion and its
// diff.
func TestBrowserTaskPage(t *testing.T) {
	t.Parallel()
	ctx := browser(t)
	url, task := groundhogProject(t)
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(url+"/tasks/"+task), chromedp.WaitVisible(chromedp.CSS(`#checkpoint-test`))))
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
