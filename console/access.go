package console

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"
)

// Who may use the console (DESIGN §2 "Access"): its owner, on every
// address. A request must name one of the console's own hosts (else 421,
// so that a page whose name an attacker rebinds to 127.0.0.1 reads
// nothing), and carry the owner's token: as the session cookie the login
// URL (?token=…) leaves in the browser, as a bearer token (scripts and
// Prometheus), or as the password of HTTP basic authentication.

// tokenParam is the query parameter of the login URL.
const tokenParam = "token"

// cookieMaxAge is how long a login lasts in a browser, in seconds.
const cookieMaxAge = 30 * 24 * 3600

// hostSet is the Host values the console answers to.
type hostSet struct {
	// exact are host:port values, lower case; names are hosts admitted
	// with any port or none (serve.http_hosts entries without a port,
	// behind a proxy that keeps the name).
	exact map[string]bool
	names map[string]bool
}

// ownHosts are the host names of a console listening on addr (the
// listener's address): that address, localhost, 127.0.0.1 and [::1] with
// its port, every address of this machine's interfaces when addr is a
// wildcard, and extra (serve.http_hosts: host, or host:port).
func ownHosts(addr string, extra []string) (hostSet, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return hostSet{}, fmt.Errorf("%w: %q is not host:port", ErrAddress, addr)
	}
	hs := hostSet{exact: map[string]bool{}, names: map[string]bool{}}
	exact := func(h string) { hs.exact[strings.ToLower(net.JoinHostPort(h, port))] = true }
	for _, h := range []string{host, "localhost", "127.0.0.1", "::1"} {
		exact(h)
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		addrs, err := net.InterfaceAddrs()
		if err != nil {
			return hostSet{}, fmt.Errorf("console: listing this machine's addresses: %w", err)
		}
		for _, a := range addrs {
			if n, ok := a.(*net.IPNet); ok {
				exact(n.IP.String())
			}
		}
	}
	for _, e := range extra {
		e = strings.ToLower(e)
		if _, _, err := net.SplitHostPort(e); err == nil {
			hs.exact[e] = true
		} else {
			hs.names[strings.Trim(e, "[]")] = true
		}
	}
	return hs, nil
}

// admits reports whether a request's Host names this console.
func (hs hostSet) admits(host string) bool {
	host = strings.ToLower(host)
	if hs.exact[host] {
		return true
	}
	name := host
	if h, _, err := net.SplitHostPort(host); err == nil {
		name = h
	}
	return hs.names[strings.Trim(name, "[]")]
}

// guard answers what the console must not serve: a foreign Host (421), a
// request without the owner's token (401), and the login URL, which it
// exchanges for the session cookie. It reports whether the request may go
// on to the pages. Only the static files are served without the token.
func (s *Server) guard(w http.ResponseWriter, r *http.Request) bool {
	if !s.hosts.admits(r.Host) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.WriteHeader(http.StatusMisdirectedRequest)
		fmt.Fprintf(w, "This console does not answer to the host %s. Open it at one of its own addresses (serve.http_hosts adds names).\n", quote(r.Host))
		return false
	}
	if given, ok := r.URL.Query()[tokenParam]; ok {
		s.login(w, r, given[len(given)-1])
		return false
	}
	if s.authorized(r) {
		return true
	}
	if p := r.URL.Path; r.Method == http.MethodGet && strings.HasPrefix(p, "/static/") && path.Clean(p) == p {
		// The stylesheet and script are the same for everyone, and the
		// login page uses them.
		return true
	}
	w.Header().Set("WWW-Authenticate", `Bearer realm="orbit console"`)
	w.Header().Set("Cache-Control", "no-store")
	s.render(w, http.StatusUnauthorized, "login", map[string]any{"Title": "Log in"})
	return false
}

// login exchanges the login URL's token for the session cookie, and sends
// the browser to the same address without the token, so that it stays out
// of the history and of Referer headers.
func (s *Server) login(w http.ResponseWriter, r *http.Request, given string) {
	if !s.matches(given) {
		w.Header().Set("Cache-Control", "no-store")
		s.render(w, http.StatusUnauthorized, "login", map[string]any{"Title": "Log in", "Wrong": true})
		return
	}
	http.SetCookie(w, &http.Cookie{Name: s.cookieName, Value: s.session, Path: "/", MaxAge: cookieMaxAge,
		HttpOnly: true, SameSite: http.SameSiteStrictMode})
	q := r.URL.Query()
	q.Del(tokenParam)
	// Cleaned, so that "//elsewhere" stays on this console.
	to := url.URL{Path: path.Clean("/" + r.URL.Path), RawQuery: q.Encode()}
	w.Header().Set("Cache-Control", "no-store")
	http.Redirect(w, r, to.String(), http.StatusSeeOther)
}

// authorized reports whether r carries the session cookie, the token as a
// bearer token, or the token as a basic authentication password.
func (s *Server) authorized(r *http.Request) bool {
	if c, err := r.Cookie(s.cookieName); err == nil && equalSecret(c.Value, s.session) {
		return true
	}
	if _, pass, ok := r.BasicAuth(); ok {
		return s.matches(pass)
	}
	if bearer, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok {
		return s.matches(bearer)
	}
	return false
}

// matches reports whether given is the token.
func (s *Server) matches(given string) bool { return equalSecret(given, s.token) }

// equalSecret compares two secrets in time that depends on neither: it
// compares their digests.
func equalSecret(a, b string) bool {
	da, db := sha256.Sum256([]byte(a)), sha256.Sum256([]byte(b))
	return subtle.ConstantTimeCompare(da[:], db[:]) == 1
}

// sessionValue is the cookie a login leaves: derived from the token, so
// that a new token ends every session, and not the token itself, so that
// the cookie does not give the login URL away.
func sessionValue(token string) string {
	mac := hmac.New(sha256.New, []byte(token))
	mac.Write([]byte("orbit console session"))
	return hex.EncodeToString(mac.Sum(nil))
}

// cookieName names the session cookie after the console's port: browsers
// keep cookies by host, not by port, and two projects' consoles on one
// machine must not log each other out.
func cookieName(addr string) string {
	_, port, _ := net.SplitHostPort(addr)
	return "orbit-console-" + port
}

// OwnerToken returns the console's token kept in file, making it (24
// random bytes, in hex, mode 0600) the first time. Two engines starting at
// once get the same token: the file is linked into place whole, never
// overwritten. A token file that another user may read, or that is not a
// regular file of this user's, is refused: the token may have leaked, and
// deleting the file makes a new one.
func OwnerToken(file string) (string, error) {
	// A second try reads what another engine linked into place first.
	for range 2 {
		token, err := readToken(file)
		if !errors.Is(err, fs.ErrNotExist) {
			return token, err
		}
		if err := makeToken(file); err != nil && !errors.Is(err, fs.ErrExist) {
			return "", err
		}
	}
	return readToken(file)
}

func readToken(file string) (string, error) {
	f, err := os.OpenFile(file, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		if errors.Is(err, syscall.ELOOP) {
			return "", fmt.Errorf("%w: %s is a symbolic link; delete it and a new token is made", ErrToken, file)
		}
		return "", err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return "", err
	}
	st, ok := info.Sys().(*syscall.Stat_t)
	switch {
	case !info.Mode().IsRegular():
		return "", fmt.Errorf("%w: %s is not a regular file", ErrToken, file)
	case info.Mode().Perm()&0o077 != 0:
		return "", fmt.Errorf("%w: %s has mode %04o, so others may have read the token; delete it and a new one is made", ErrToken, file, info.Mode().Perm())
	case ok && int(st.Uid) != os.Geteuid():
		return "", fmt.Errorf("%w: %s belongs to uid %d, not to this user (%d)", ErrToken, file, st.Uid, os.Geteuid())
	}
	buf := make([]byte, 256)
	n, err := f.Read(buf)
	if err != nil {
		return "", fmt.Errorf("%w: reading %s: %v", ErrToken, file, err)
	}
	token := strings.TrimSpace(string(buf[:n]))
	if len(token) < 32 || strings.ContainsFunc(token, func(r rune) bool { return r <= ' ' || r > '~' }) {
		return "", fmt.Errorf("%w: %s does not hold a token (32 or more printable characters); delete it and a new one is made", ErrToken, file)
	}
	return token, nil
}

// makeToken writes a new token beside file and links it into place: it
// fails with fs.ErrExist when file is already there.
func makeToken(file string) error {
	raw := make([]byte, 24)
	if _, err := rand.Read(raw); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(file), ".console.token-*")
	if err != nil {
		return fmt.Errorf("%w: %v", ErrToken, err)
	}
	defer os.Remove(tmp.Name())
	// CreateTemp makes the file 0600.
	_, err = tmp.WriteString(hex.EncodeToString(raw) + "\n")
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("%w: writing %s: %v", ErrToken, tmp.Name(), err)
	}
	if err := os.Link(tmp.Name(), file); err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("%w: %v", ErrToken, err)
	} else if err != nil {
		return err
	}
	return nil
}
