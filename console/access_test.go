package console_test

import (
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/internal/testkit"
)

// noRedirect is a client that shows redirects instead of following them.
var noRedirect = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

// send sends req and returns its status, headers and body.
func send(t *testing.T, req *http.Request) (int, http.Header, string) {
	t.Helper()
	resp, err := noRedirect.Do(req)
	require.NoError(t, err, "%s %s", req.Method, req.URL)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, resp.Header, string(body)
}

// TestConsoleAnswersOnlyItsOwnHosts: with the owner's token, a request for
// a host the console is not (a name rebound to 127.0.0.1, another port) is
// 421 before any page runs, /metrics and a cancel POST whose Origin matches
// the foreign Host included; its own addresses and serve.http_hosts are
// served.
func TestConsoleAnswersOnlyItsOwnHosts(t *testing.T) {
	t.Parallel()
	p := testkit.NewProject(t)
	p.WriteFile(".orbit/config.yaml", "serve:\n  http_hosts: [orbit.example.test, \"pinned.example.test:1\"]\n")
	c := serveConsole(t, p)
	_, port, err := net.SplitHostPort(strings.TrimPrefix(c.URL, "http://"))
	require.NoError(t, err)
	id := runningJob(t, p, "example_slow")

	for host, want := range map[string]int{
		"127.0.0.1:" + port: http.StatusOK, "localhost:" + port: http.StatusOK, "[::1]:" + port: http.StatusOK,
		"LOCALHOST:" + port: http.StatusOK, "orbit.example.test": http.StatusOK, "Orbit.Example.Test:" + port: http.StatusOK,
		"pinned.example.test:1": http.StatusOK,

		"evil.example.com:" + port: http.StatusMisdirectedRequest, "evil.example.com": http.StatusMisdirectedRequest,
		"127.0.0.1:1": http.StatusMisdirectedRequest, "localhost": http.StatusMisdirectedRequest,
		"pinned.example.test:" + port: http.StatusMisdirectedRequest, "localhost.evil.example:" + port: http.StatusMisdirectedRequest,
		"127.0.0.1.nip.io:" + port: http.StatusMisdirectedRequest,
	} {
		for _, path := range []string{"/", "/runs/" + id, "/runs/" + id + "/events", "/tasks", "/metrics", "/static/console.css"} {
			req := c.request(t, http.MethodGet, path)
			req.Host = host
			code, _, body := send(t, req)
			assert.Equal(t, want, code, "Host %q %s", host, path)
			if want == http.StatusMisdirectedRequest {
				assert.Contains(t, body, "does not answer to the host")
			}
		}
	}

	for _, host := range []string{"evil.example.com:" + port, "evil.example.com"} {
		req := c.request(t, http.MethodPost, "/runs/"+id+"/cancel")
		req.Host = host
		req.Header.Set("Origin", "http://"+host)
		req.Header.Set("Sec-Fetch-Site", "same-origin")
		code, _, _ := send(t, req)
		assert.Equal(t, http.StatusMisdirectedRequest, code, host)
		req = c.request(t, http.MethodGet, "/runs/"+id+"/live?after=0")
		req.Host = host
		code, _, _ = send(t, req)
		assert.Equal(t, http.StatusMisdirectedRequest, code, "live, %s", host)
	}
	time.Sleep(300 * time.Millisecond)
	assert.Equal(t, events.StateRunning, showRun(t, p, id).State, "a rebound page cancels nothing")
}

// TestConsoleAsksForItsOwnersToken: on loopback too, a request without the
// owner's token is 401 with how to log in, a cancel changes nothing; the
// login URL leaves an HttpOnly, SameSite=Strict cookie (not the token) and
// leads to the address without the token; the cookie, a bearer token or
// the token as a basic password are admitted thereafter, a wrong one is
// not. The token is kept in .orbit/state/console.token, mode 0600, and is
// the same after a restart.
func TestConsoleAsksForItsOwnersToken(t *testing.T) {
	t.Parallel()
	p := testkit.NewProject(t)
	c := serveConsole(t, p)
	_, port, err := net.SplitHostPort(strings.TrimPrefix(c.URL, "http://"))
	require.NoError(t, err)
	file := filepath.Join(p.Root, ".orbit", "state", "console.token")
	info, err := os.Stat(file)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), info.Mode().Perm())
	kept, err := os.ReadFile(file)
	require.NoError(t, err)
	assert.Equal(t, strings.TrimSpace(string(kept)), c.Token)
	assert.GreaterOrEqual(t, len(c.Token), 32)
	assert.Equal(t, c.URL+"/?token="+c.Token, c.Login)
	id := runningJob(t, p, "example_slow")

	anonymous := func(method, path string) *http.Request {
		req, err := http.NewRequest(method, c.URL+path, nil)
		require.NoError(t, err)
		return req
	}
	for _, path := range []string{"/", "/runs/" + id, "/runs/" + id + "/events", "/runs/" + id + "/steps?under=x", "/runs/" + id + "/live?after=0",
		"/tasks", "/tasks/T-1", "/metrics", "/nowhere", "/static/../metrics"} {
		code, header, body := send(t, anonymous(http.MethodGet, path))
		assert.Equal(t, http.StatusUnauthorized, code, path)
		assert.Contains(t, body, "Log in", path)
		assert.Contains(t, body, ".orbit/state/console.token", path)
		assert.Contains(t, header.Get("WWW-Authenticate"), "Bearer", path)
	}
	code, _, _ := send(t, anonymous(http.MethodGet, "/static/console.css"))
	assert.Equal(t, http.StatusOK, code, "the login page's stylesheet")

	cancel := anonymous(http.MethodPost, "/runs/"+id+"/cancel")
	cancel.Header.Set("Origin", c.URL)
	cancel.Header.Set("Sec-Fetch-Site", "same-origin")
	code, _, _ = send(t, cancel)
	assert.Equal(t, http.StatusUnauthorized, code)
	time.Sleep(300 * time.Millisecond)
	assert.Equal(t, events.StateRunning, showRun(t, p, id).State, "a cancel without the token changes nothing")

	code, _, body := send(t, anonymous(http.MethodGet, "/runs/"+id+"?token=not-the-token"))
	assert.Equal(t, http.StatusUnauthorized, code)
	assert.Contains(t, body, "That is not this console's token.")

	code, header, _ := send(t, anonymous(http.MethodGet, "/runs/"+id+"/events?type=run.started&token="+c.Token))
	require.Equal(t, http.StatusSeeOther, code)
	assert.Equal(t, "/runs/"+id+"/events?type=run.started", header.Get("Location"), "the same address without the token")
	cookies := (&http.Response{Header: header}).Cookies()
	require.Len(t, cookies, 1)
	cookie := cookies[0]
	assert.Equal(t, "orbit-console-"+port, cookie.Name)
	assert.True(t, cookie.HttpOnly)
	assert.Equal(t, http.SameSiteStrictMode, cookie.SameSite)
	assert.Equal(t, "/", cookie.Path)
	assert.NotContains(t, cookie.Value, c.Token, "the cookie is not the token")
	assert.NotContains(t, header.Get("Set-Cookie"), c.Token)

	withCookie := anonymous(http.MethodGet, "/runs/"+id)
	withCookie.AddCookie(cookie)
	code, _, body = send(t, withCookie)
	assert.Equal(t, http.StatusOK, code)
	assert.Contains(t, body, `id="cancel"`)
	forged := anonymous(http.MethodGet, "/runs/"+id)
	forged.AddCookie(&http.Cookie{Name: cookie.Name, Value: strings.Repeat("0", len(cookie.Value))})
	code, _, _ = send(t, forged)
	assert.Equal(t, http.StatusUnauthorized, code, "a made-up cookie")
	code, header, _ = send(t, anonymous(http.MethodGet, "//elsewhere.example/x?token="+c.Token))
	assert.Equal(t, http.StatusSeeOther, code)
	assert.Equal(t, "/elsewhere.example/x", header.Get("Location"), "a login stays on the console")

	for name, set := range map[string]func(*http.Request){
		"bearer": func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+c.Token) },
		"basic":  func(r *http.Request) { r.SetBasicAuth("prometheus", c.Token) },
	} {
		req := anonymous(http.MethodGet, "/metrics")
		set(req)
		code, _, _ := send(t, req)
		assert.Equal(t, http.StatusOK, code, name)
	}
	wrong := anonymous(http.MethodGet, "/metrics")
	wrong.Header.Set("Authorization", "Bearer "+c.Token[:len(c.Token)-1])
	code, _, _ = send(t, wrong)
	assert.Equal(t, http.StatusUnauthorized, code, "a token cut short")

	post := anonymous(http.MethodPost, "/runs/"+id+"/cancel")
	post.AddCookie(cookie)
	post.Header.Set("Origin", "https://evil.example")
	code, _, _ = send(t, post)
	assert.Equal(t, http.StatusForbidden, code, "the owner's cookie on a cross-site POST")
	post = anonymous(http.MethodPost, "/runs/"+id+"/cancel")
	post.AddCookie(cookie)
	post.Header.Set("Origin", c.URL)
	post.Header.Set("Sec-Fetch-Site", "same-origin")
	code, _, _ = send(t, post)
	assert.Equal(t, http.StatusSeeOther, code, "the owner cancels")
	waitFor(t, "the run to be cancelled", func() bool { return showRun(t, p, id).State == events.StateCancelled })

	p.StopEngine()
	again := serveConsole(t, p)
	assert.Equal(t, c.Token, again.Token, "the token is kept")
}

// TestConsoleHonoursHTTPToken: with --http-token, on loopback too, that
// token is the credential (and no token file is made or asked for).
func TestConsoleHonoursHTTPToken(t *testing.T) {
	t.Parallel()
	p := testkit.NewProject(t)
	c := serveConsoleOn(t, p, "127.0.0.1:0", "operators-choice-0123456789abcdef")
	assert.Empty(t, c.Login, "no login URL with the token in it is printed")
	_, err := os.Stat(filepath.Join(p.Root, ".orbit", "state", "console.token"))
	assert.True(t, os.IsNotExist(err), "no token file: %v", err)
	for token, want := range map[string]int{"": http.StatusUnauthorized, "operators-choice": http.StatusUnauthorized,
		"operators-choice-0123456789abcdef": http.StatusOK} {
		req := c.request(t, http.MethodGet, "/metrics")
		req.Header.Set("Authorization", "Bearer "+token)
		code, _, _ := send(t, req)
		assert.Equal(t, want, code, token)
	}
	req, err := http.NewRequest(http.MethodGet, c.URL+"/?token=operators-choice-0123456789abcdef", nil)
	require.NoError(t, err)
	code, header, _ := send(t, req)
	assert.Equal(t, http.StatusSeeOther, code)
	assert.NotEmpty(t, header.Get("Set-Cookie"))
}

// TestTheTokenFileIsTheOwnersAlone: the token file is 0600, and another
// user (nobody, when the tests run as root) who can reach the directory
// cannot read it; a token file that others may read is refused with what
// to do, exit 2.
func TestTheTokenFileIsTheOwnersAlone(t *testing.T) {
	t.Parallel()
	p := testkit.NewProject(t)
	c := serveConsole(t, p)
	file := filepath.Join(p.Root, ".orbit", "state", "console.token")
	info, err := os.Stat(file)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), info.Mode().Perm())

	if os.Geteuid() == 0 {
		// nobody may reach the file, and only its mode stops them.
		for dir := filepath.Dir(file); dir != "/"; dir = filepath.Dir(dir) {
			require.NoError(t, os.Chmod(dir, 0o755))
			if dir == os.TempDir() || filepath.Dir(dir) == os.TempDir() {
				break
			}
		}
		cat := exec.Command("cat", file)
		cat.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
		out, err := cat.CombinedOutput()
		require.Error(t, err, "nobody read the token")
		assert.Contains(t, string(out), "Permission denied")
		assert.NotContains(t, string(out), c.Token)
		ls := exec.Command("ls", filepath.Dir(file))
		ls.SysProcAttr = cat.SysProcAttr
		out, err = ls.CombinedOutput()
		require.NoError(t, err, "%s", out)
		assert.Contains(t, string(out), "console.token", "the directory was open to nobody: the file's mode alone kept them out")
	}

	p.StopEngine()
	require.NoError(t, os.Chmod(file, 0o644))
	r := p.Orbit("serve", "--listen", "127.0.0.1:0", "--http", "127.0.0.1:0")
	assert.Equal(t, 2, r.Code, r.String())
	assert.Contains(t, r.Stderr, file+" has mode 0644, so others may have read the token; delete it and a new one is made")
	require.NoError(t, os.Remove(file))
	fresh := serveConsole(t, p)
	assert.NotEqual(t, c.Token, fresh.Token, "a new token")
}
