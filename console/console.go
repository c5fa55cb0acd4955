// Package console is Orbit's web console (DESIGN §11): server-rendered pages
// of runs, their events and Groundhog tasks, live updates of a running run
// over server-sent events, and /metrics in the Prometheus text format.
//
// The console runs inside the engine process on the engine's own log
// connection. It reads the views through the engine's query API
// (orbit.api.*), exactly as the CLI does, and reads events from the log; it
// never opens the views file. It serves its owner only, and only under its
// own host names (access.go).
package console

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"time"
	"unicode/utf8"

	template "github.com/DataDog/datadog-agent/pkg/template/html"

	"github.com/orbitrun/orbit/events"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// Config configures a Server.
type Config struct {
	// Log is the connection the pages read through: the engine's own.
	Log *events.Log
	// Requester names who asks for a cancel from the console, for the
	// record (default "console").
	Requester string
	// Token is the owner's credential, asked of every request (see
	// access.go): --http-token, else the token OwnerToken keeps in the
	// project's state. Required.
	Token string
	// Hosts are host names the console answers to besides its own
	// addresses (serve.http_hosts): "name" with any port, or "name:port".
	Hosts []string
	// Logger receives operational messages (nil discards them).
	Logger *slog.Logger
}

// Server is the console's HTTP handler.
type Server struct {
	log        *events.Log
	requester  string
	token      string
	session    string
	cookieName string
	hosts      hostSet
	live       chan struct{}
	logger     *slog.Logger
	pages      map[string]*template.Template
	mux        *http.ServeMux
}

// New returns the console for cfg, served at addr (host:port, the
// listener's address: it names the console's own hosts and its cookie).
func New(addr string, cfg Config) (*Server, error) {
	if cfg.Log == nil {
		return nil, errors.New("console: no log")
	}
	if cfg.Token == "" {
		return nil, fmt.Errorf("%w: the console needs its owner's token", ErrToken)
	}
	if cfg.Requester == "" {
		cfg.Requester = "console"
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	hosts, err := ownHosts(addr, cfg.Hosts)
	if err != nil {
		return nil, err
	}
	pages, err := parsePages()
	if err != nil {
		return nil, err
	}
	s := &Server{log: cfg.Log, requester: cfg.Requester, token: cfg.Token, session: sessionValue(cfg.Token),
		cookieName: cookieName(addr), hosts: hosts, live: make(chan struct{}, maxLive),
		logger: cfg.Logger.With("component", "console"), pages: pages}
	static, err := fs.Sub(staticFS, "static")
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", s.runsPage)
	mux.HandleFunc("GET /runs/{id}", s.runPage)
	mux.HandleFunc("GET /runs/{id}/steps", s.stepsPage)
	mux.HandleFunc("GET /runs/{id}/live", s.runLive)
	mux.HandleFunc("GET /runs/{id}/events", s.eventsPage)
	mux.Handle("POST /runs/{id}/cancel", http.NewCrossOriginProtection().Handler(http.HandlerFunc(s.cancelRun)))
	mux.Handle("POST /runs/{id}/pause", http.NewCrossOriginProtection().Handler(s.pauseRun(false)))
	mux.Handle("POST /runs/{id}/unpause", http.NewCrossOriginProtection().Handler(s.pauseRun(true)))
	mux.HandleFunc("GET /jobs/{name}", s.jobPage)
	mux.Handle("POST /jobs/{name}/pause", http.NewCrossOriginProtection().Handler(s.pauseJob(false)))
	mux.Handle("POST /jobs/{name}/unpause", http.NewCrossOriginProtection().Handler(s.pauseJob(true)))
	mux.HandleFunc("GET /routines", s.routinesPage)
	mux.HandleFunc("GET /tasks", s.tasksPage)
	mux.HandleFunc("GET /tasks/{id}", s.taskPage)
	mux.HandleFunc("GET /metrics", s.metrics)
	mux.Handle("GET /static/", http.StripPrefix("/static/", http.FileServerFS(static)))
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		s.notFound(w, "page "+quote(r.URL.Path))
	})
	s.mux = mux
	return s, nil
}

// ServeHTTP serves the console to its owner (see guard): nothing, not even
// /metrics or a POST, reaches a page before the host and the token are
// checked.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Content-Security-Policy", "default-src 'self'; frame-ancestors 'none'")
	w.Header().Set("Referrer-Policy", "no-referrer")
	if !s.guard(w, r) {
		return
	}
	s.mux.ServeHTTP(w, r)
}

// Loopback reports whether a host:port address only accepts local clients.
func Loopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Listen opens the console's address. Beyond loopback it needs a token the
// operator chose (--http-token): the console asks every request for its
// owner's token on every address, but serving beyond the machine is a
// decision to make, not a default.
func Listen(addr, token string) (net.Listener, error) {
	if _, _, err := net.SplitHostPort(addr); err != nil {
		return nil, fmt.Errorf("%w: --http %q is not host:port", ErrAddress, addr)
	}
	if token == "" && !Loopback(addr) {
		return nil, fmt.Errorf("%w: --http %s is beyond loopback; give it --http-token (ORBIT_HTTP_TOKEN), which the console then asks of every request", ErrInsecure, addr)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("console: %w", err)
	}
	return ln, nil
}

// LoginURL is the address that logs a browser in to the console at base
// (http://host:port) with token: opened once, it leaves the session cookie
// and goes on to the runs page.
func LoginURL(base, token string) string {
	return base + "/?" + url.Values{tokenParam: {token}}.Encode()
}

// Serve serves the console on ln until ctx ends, asking every request for
// cfg.Token.
func Serve(ctx context.Context, ln net.Listener, cfg Config) error {
	s, err := New(ln.Addr().String(), cfg)
	if err != nil {
		ln.Close()
		return err
	}
	srv := &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second,
		BaseContext: func(net.Listener) context.Context { return ctx }}
	s.logger.Info("console serving", "url", "http://"+ln.Addr().String())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	select {
	case err := <-done:
		return fmt.Errorf("console: %w", err)
	case <-ctx.Done():
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
		return nil
	}
}

// idPattern is what a run or task id in a URL may look like: anything else
// (dots, slashes, control characters) is not looked up.
var idPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]{0,127}$`)

// pathID returns the {id} of the request, or "" (having answered 404) when
// it is not one.
func (s *Server) pathID(w http.ResponseWriter, r *http.Request, what string) string {
	id := r.PathValue("id")
	if !idPattern.MatchString(id) {
		s.notFound(w, what+" "+quote(id))
		return ""
	}
	return id
}

// request asks the engine's API.
func (s *Server) request(ctx context.Context, endpoint string, req, resp any) error {
	return s.log.Request(ctx, endpoint, req, resp)
}

// lastSeq is where the log is now: queries ask for views at least as new.
func (s *Server) lastSeq(ctx context.Context) (uint64, error) {
	return s.log.LastSeq(ctx)
}

// fail answers an error of the engine: 404 for what the views do not hold,
// 400 for a request it refused, 503 for an engine that does not answer,
// 500 otherwise.
func (s *Server) fail(w http.ResponseWriter, what string, err error) {
	switch {
	case errors.Is(err, events.ErrNotFound):
		s.notFound(w, what)
	case errors.Is(err, events.ErrInvalidRequest):
		s.errorPage(w, http.StatusBadRequest, "Bad request", err.Error())
	case errors.Is(err, events.ErrUnavailable):
		s.errorPage(w, http.StatusServiceUnavailable, "The engine did not answer", err.Error())
	default:
		s.logger.Error("console request failed", "what", what, "err", err)
		s.errorPage(w, http.StatusInternalServerError, "Error", err.Error())
	}
}

// echoCap bounds what of a request a page repeats.
const echoCap = 80

// quote is s as a quoted Go string, cut at echoCap bytes: an id, path or
// parameter that a page repeats back.
func quote(s string) string {
	if len(s) <= echoCap {
		return strconv.Quote(s)
	}
	cut := echoCap
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return strconv.Quote(s[:cut]) + fmt.Sprintf("… (%d bytes in all)", len(s))
}

func (s *Server) notFound(w http.ResponseWriter, what string) {
	s.errorPage(w, http.StatusNotFound, "Not found", "There is no "+what+".")
}

func (s *Server) errorPage(w http.ResponseWriter, code int, title, msg string) {
	s.render(w, code, "error", map[string]any{"Title": title, "Message": msg, "Code": code})
}
