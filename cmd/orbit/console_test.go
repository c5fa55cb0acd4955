package main_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/internal/testkit"
)

// TestConsoleCommandPrintsTheLoginURLOfABackgroundEngine: a background
// engine (started by a command on demand) serves serve.http's console and
// prints nothing a user sees; orbit console finds it and prints the login
// URL made of .orbit/state/console.token, which logs a browser in. With
// --open it hands that URL to xdg-open.
func TestConsoleCommandPrintsTheLoginURLOfABackgroundEngine(t *testing.T) {
	t.Parallel()
	p := testkit.NewProject(t)
	p.WriteFile(".orbit/config.yaml", "serve:\n  http: 127.0.0.1:0\n")
	r := p.Orbit("job", "run", "hello")
	require.Equal(t, 0, r.Code, r.String())
	require.NotZero(t, p.EnginePID(), "a background engine serves the root")

	r = p.Orbit("console", "--print")
	require.Equal(t, 0, r.Code, r.String())
	login := strings.TrimSpace(r.Stdout)
	require.NotContains(t, login, "\n", "--print prints the login URL alone")
	token, err := os.ReadFile(filepath.Join(p.Root, ".orbit", "state", "console.token"))
	require.NoError(t, err)
	u, err := url.Parse(login)
	require.NoError(t, err, login)
	assert.Equal(t, "http", u.Scheme)
	assert.Regexp(t, `^127\.0\.0\.1:[1-9][0-9]*$`, u.Host, "the port the engine took, not serve.http's 0")
	assert.Equal(t, strings.TrimSpace(string(token)), u.Query().Get("token"))
	base := "http://" + u.Host

	noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := noFollow.Get(base + "/")
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode, "without the token")
	resp, err = noFollow.Get(login)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, "the login URL logs in")
	cookies := resp.Cookies()
	require.NotEmpty(t, cookies)
	req, err := http.NewRequest(http.MethodGet, base+"/", nil)
	require.NoError(t, err)
	for _, c := range cookies {
		req.AddCookie(c)
	}
	resp, err = noFollow.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode, "the session cookie admits the browser")

	r = p.Orbit("console")
	require.Equal(t, 0, r.Code, r.String())
	assert.Contains(t, r.Stdout, "console at "+base+"\n")
	assert.Contains(t, r.Stdout, login+"\n")

	r = p.Orbit("console", "--json")
	require.Equal(t, 0, r.Code, r.String())
	var got struct {
		URL      string `json:"url"`
		LoginURL string `json:"login_url"`
		Engine   string `json:"engine"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.Stdout), &got), r.Stdout)
	assert.Equal(t, base, got.URL)
	assert.Equal(t, login, got.LoginURL)
	assert.NotEmpty(t, got.Engine)

	// --open runs xdg-open with the login URL, found on PATH.
	bin := t.TempDir()
	opened := filepath.Join(t.TempDir(), "opened")
	require.NoError(t, os.WriteFile(filepath.Join(bin, "xdg-open"), []byte("#!/bin/sh\nprintf '%s\\n' \"$@\" > "+opened+"\n"), 0o700))
	p.Env = append(p.Env, "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	r = p.Orbit("console", "--open")
	require.Equal(t, 0, r.Code, r.String())
	got2, err := os.ReadFile(opened)
	require.NoError(t, err, r.String())
	assert.Equal(t, login+"\n", string(got2))
}

// TestConsoleCommandRefusesWithoutAConsole: with no serve.http and no
// engine, orbit console starts nothing and says how to get a console; an
// engine that serves none is refused the same way, and one started before
// serve.http was set says that a restart applies it.
func TestConsoleCommandRefusesWithoutAConsole(t *testing.T) {
	t.Parallel()
	p := testkit.NewProject(t)
	r := p.Orbit("console")
	assert.Equal(t, 3, r.Code, r.String())
	assert.Contains(t, r.Stderr, "serve.http")
	assert.Contains(t, r.Stderr, "orbit serve --http")
	assert.Zero(t, p.EnginePID(), "no engine was started for nothing")

	r = p.Orbit("job", "run", "hello")
	require.Equal(t, 0, r.Code, r.String())
	r = p.Orbit("console", "--print")
	assert.Equal(t, 3, r.Code, r.String())
	assert.Empty(t, r.Stdout)
	assert.Contains(t, r.Stderr, "serves no console")
	assert.Contains(t, r.Stderr, "serve.http")

	p.WriteFile(".orbit/config.yaml", "serve:\n  http: 127.0.0.1:0\n")
	r = p.Orbit("console")
	assert.Equal(t, 3, r.Code, r.String())
	assert.Contains(t, r.Stderr, "orbit engine restart")

	r = p.Orbit("engine", "restart")
	require.Equal(t, 0, r.Code, r.String())
	r = p.Orbit("console", "--print")
	require.Equal(t, 0, r.Code, r.String())
	assert.Contains(t, r.Stdout, "/?token=")
}
