package console

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"net/http"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	// html/template without its method calls: see "The binary" in
	// ARCHITECTURE.md.
	template "github.com/DataDog/datadog-agent/pkg/template/html"

	"github.com/orbitrun/orbit/events"
)

// valueCap bounds how much of an input, output or event payload a page
// shows; the rest is cut with a note.
const valueCap = 8 << 10

// funcs are what the templates call besides their builtins. A template
// reads fields, map keys and these: the template package here never calls
// a value's methods (see the import), and {{.Name}} of a method fails.
var funcs = template.FuncMap{
	"json":     showJSON,
	"raw":      showRaw,
	"ms":       showMS,
	"since":    since,
	"time":     showTime,
	"terminal": events.Terminal,
	"depth":    depth,
	"short":    short,
	"tails":    tails,
	"add":      func(a, b int) int { return a + b },
}

// parsePages parses every page with the layout and the partials (the
// templates whose file names begin with "_").
func parsePages() (map[string]*template.Template, error) {
	names, err := fs.Glob(templateFS, "templates/*.html")
	if err != nil {
		return nil, err
	}
	shared := []string{"templates/layout.html"}
	var bodies []string
	for _, name := range names {
		switch base := strings.TrimPrefix(name, "templates/"); {
		case strings.HasPrefix(base, "_"):
			shared = append(shared, name)
		case base != "layout.html":
			bodies = append(bodies, name)
		}
	}
	pages := map[string]*template.Template{}
	for _, name := range bodies {
		page := strings.TrimSuffix(strings.TrimPrefix(name, "templates/"), ".html")
		t, err := template.New(page).Funcs(funcs).ParseFS(templateFS, append(slices.Clone(shared), name)...)
		if err != nil {
			return nil, fmt.Errorf("console: template %s: %w", name, err)
		}
		pages[page] = t
	}
	return pages, nil
}

// render writes a page. It renders into a buffer first, so that a failing
// template gives a 500 instead of half a page.
func (s *Server) render(w http.ResponseWriter, code int, page string, data any) {
	var buf bytes.Buffer
	if err := s.pages[page].ExecuteTemplate(&buf, "layout", data); err != nil {
		s.logger.Error("console template failed", "page", page, "err", err)
		http.Error(w, "template "+page+" failed", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(code)
	_, _ = w.Write(buf.Bytes())
}

// renderFragment executes one named template of a page into a string.
func (s *Server) renderFragment(page, name string, data any) (string, error) {
	var buf bytes.Buffer
	if err := s.pages[page].ExecuteTemplate(&buf, name, data); err != nil {
		return "", err
	}
	return buf.String(), nil
}

// showJSON is v as indented JSON, cut at valueCap.
func showJSON(v any) string {
	if v == nil {
		return ""
	}
	var data []byte
	if raw, ok := v.(json.RawMessage); ok {
		var buf bytes.Buffer
		if json.Indent(&buf, raw, "", "  ") == nil {
			data = buf.Bytes()
		} else {
			data = raw
		}
	} else {
		// Not escaped for HTML here: the template escapes it, and a
		// <script> an output holds reads as it was printed.
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		enc.SetIndent("", "  ")
		if err := enc.Encode(v); err != nil {
			return fmt.Sprintf("(%v)", err)
		}
		data = bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
	}
	return showRaw(string(data))
}

// tail is one stream a step printed.
type tail struct{ Name, Text string }

// tails are the stdout and stderr a shell step's output holds, as text.
func tails(v any) []tail {
	m, ok := v.(map[string]any)
	if !ok {
		return nil
	}
	var out []tail
	for _, name := range []string{"stdout", "stderr"} {
		if text, ok := m[name].(string); ok && text != "" {
			out = append(out, tail{Name: name, Text: showRaw(text)})
		}
	}
	return out
}

// showRaw is s cut at valueCap, on a rune boundary.
func showRaw(s string) string {
	if len(s) <= valueCap {
		return s
	}
	cut := valueCap
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + fmt.Sprintf("\n… (%d more bytes)", len(s)-cut)
}

func showMS(ms int64) string {
	if ms <= 0 {
		return ""
	}
	return (time.Duration(ms) * time.Millisecond).String()
}

// since is the time from t until now, for what is still running.
func since(t *time.Time) string {
	if t == nil {
		return ""
	}
	return time.Since(*t).Truncate(100 * time.Millisecond).String()
}

func showTime(t any) string {
	switch t := t.(type) {
	case *time.Time:
		if t == nil {
			return ""
		}
		return t.UTC().Format("2006-01-02 15:04:05Z")
	case time.Time:
		if t.IsZero() {
			return ""
		}
		return t.UTC().Format("2006-01-02 15:04:05Z")
	}
	return ""
}

// depth is how deep a step instance key nests: "a" 0, "loop/2/review" 2.
func depth(key string) int { return strings.Count(key, "/") }

// short is the first 12 characters of a commit id.
func short(sha string) string {
	if len(sha) > 12 {
		return sha[:12]
	}
	return sha
}
