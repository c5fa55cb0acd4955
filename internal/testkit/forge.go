package testkit

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// ForgeServer is a local forge that speaks GitHub's REST wire format (under
// /api/v3/, as a GitHub Enterprise server does) and Gitea's (under
// /api/v1/) for the endpoints Orbit's shipping uses: pull requests listed
// (GitHub by head), opened and read; labels; issue comments; the
// repository. Its one repository is a real bare git repository — the
// origin tests push to — so a pull request's head is a branch that was
// really pushed, and one is refused when the branch is not there, when it
// has no commit beyond its base, or when an open one has the same head.
// Requests need the token (Authorization: Bearer or token).
//
// It is safe for concurrent use.
type ForgeServer struct {
	URL         string // the server's root: GitHub's API is URL/api/v3/, Gitea's URL/api/v1/
	Token       string
	Owner, Name string
	bare        string

	mu       sync.Mutex
	pulls    []*ForgePull
	labels   []forgeLabel
	requests []string
}

// ForgePull is a pull request the forge holds.
type ForgePull struct {
	Number   int
	Title    string
	Body     string
	Head     string
	HeadSHA  string // the head branch's commit when it was opened
	Base     string
	State    string // open
	Labels   []string
	Comments []string
}

type forgeLabel struct {
	ID   int64  `json:"id"`
	Name string `json:"name"`
}

// NewForgeServer starts a forge for the bare repository at bare, known as
// owner/name, and stops it when the test ends.
func NewForgeServer(t testing.TB, bare, owner, name string) *ForgeServer {
	t.Helper()
	f := &ForgeServer{Token: "forge-token-" + strconv.Itoa(os.Getpid()) + "-0123456789", Owner: owner, Name: name, bare: bare}
	srv := httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(srv.Close)
	f.URL = srv.URL
	return f
}

// Pulls returns copies of the pull requests, in the order they were opened.
func (f *ForgeServer) Pulls() []ForgePull {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]ForgePull, len(f.pulls))
	for i, p := range f.pulls {
		out[i] = *p
		out[i].Labels = slices.Clone(p.Labels)
		out[i].Comments = slices.Clone(p.Comments)
	}
	return out
}

// Requests returns "METHOD path" of every authorised request, in order.
func (f *ForgeServer) Requests() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.requests)
}

func (f *ForgeServer) serve(w http.ResponseWriter, r *http.Request) {
	auth := r.Header.Get("Authorization")
	if auth != "Bearer "+f.Token && auth != "token "+f.Token {
		reply(w, http.StatusUnauthorized, map[string]any{"message": "Bad credentials"})
		return
	}
	var api, rest string
	switch {
	case strings.HasPrefix(r.URL.Path, "/api/v3/"):
		api, rest = "github", strings.TrimPrefix(r.URL.Path, "/api/v3")
	case strings.HasPrefix(r.URL.Path, "/api/v1/"):
		api, rest = "gitea", strings.TrimPrefix(r.URL.Path, "/api/v1")
	default:
		reply(w, http.StatusNotFound, map[string]any{"message": "Not Found"})
		return
	}
	repo := "/repos/" + f.Owner + "/" + f.Name
	if !strings.HasPrefix(rest, repo) {
		reply(w, http.StatusNotFound, map[string]any{"message": "Not Found"})
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.requests = append(f.requests, r.Method+" "+r.URL.Path)
	parts := strings.Split(strings.Trim(strings.TrimPrefix(rest, repo), "/"), "/")
	switch {
	case r.Method == http.MethodGet && parts[0] == "":
		reply(w, http.StatusOK, f.repoJSON())
	case r.Method == http.MethodGet && len(parts) == 1 && parts[0] == "pulls":
		f.listPulls(w, r, api)
	case r.Method == http.MethodPost && len(parts) == 1 && parts[0] == "pulls":
		f.createPull(w, r, api)
	case r.Method == http.MethodGet && len(parts) == 2 && parts[0] == "pulls":
		if p := f.pull(parts[1]); p != nil {
			reply(w, http.StatusOK, f.pullJSON(p))
		} else {
			reply(w, http.StatusNotFound, map[string]any{"message": "Not Found"})
		}
	case api == "gitea" && len(parts) == 1 && parts[0] == "labels":
		f.repoLabels(w, r)
	case r.Method == http.MethodPost && len(parts) == 3 && parts[0] == "issues" && parts[2] == "labels":
		f.addLabels(w, r, parts[1], api)
	case r.Method == http.MethodPost && len(parts) == 3 && parts[0] == "issues" && parts[2] == "comments":
		f.comment(w, r, parts[1])
	default:
		reply(w, http.StatusNotFound, map[string]any{"message": "Not Found"})
	}
}

func (f *ForgeServer) listPulls(w http.ResponseWriter, r *http.Request, api string) {
	q := r.URL.Query()
	out := []any{}
	for _, p := range f.pulls {
		if st := q.Get("state"); st != "" && st != "all" && st != p.State {
			continue
		}
		if head := q.Get("head"); api == "github" && head != "" && head != f.Owner+":"+p.Head {
			continue
		}
		out = append(out, f.pullJSON(p))
	}
	if api == "gitea" {
		// One page holds them all: a second page is empty.
		if page, _ := strconv.Atoi(q.Get("page")); page > 1 {
			out = []any{}
		}
	}
	reply(w, http.StatusOK, out)
}

func (f *ForgeServer) createPull(w http.ResponseWriter, r *http.Request, api string) {
	var in struct {
		Title, Body, Head, Base string
	}
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil || in.Head == "" || in.Base == "" || in.Title == "" {
		reply(w, http.StatusUnprocessableEntity, map[string]any{"message": "Validation Failed: title, head and base are required"})
		return
	}
	head, ok := f.branch(in.Head)
	if !ok {
		reply(w, http.StatusUnprocessableEntity, map[string]any{"message": "Validation Failed",
			"errors": []any{map[string]any{"resource": "PullRequest", "field": "head", "code": "invalid"}}})
		return
	}
	base, ok := f.branch(in.Base)
	if !ok {
		reply(w, http.StatusUnprocessableEntity, map[string]any{"message": "Validation Failed",
			"errors": []any{map[string]any{"resource": "PullRequest", "field": "base", "code": "invalid"}}})
		return
	}
	for _, p := range f.pulls {
		if p.State == "open" && p.Head == in.Head && p.Base == in.Base {
			status := http.StatusUnprocessableEntity
			if api == "gitea" {
				status = http.StatusConflict
			}
			reply(w, status, map[string]any{"message": "A pull request already exists for " + f.Owner + ":" + in.Head + "."})
			return
		}
	}
	if f.git("merge-base", "--is-ancestor", head, base) == nil {
		reply(w, http.StatusUnprocessableEntity, map[string]any{"message": "Validation Failed: No commits between " + in.Base + " and " + in.Head})
		return
	}
	p := &ForgePull{Number: len(f.pulls) + 1, Title: in.Title, Body: in.Body, Head: in.Head, HeadSHA: head, Base: in.Base, State: "open"}
	f.pulls = append(f.pulls, p)
	reply(w, http.StatusCreated, f.pullJSON(p))
}

func (f *ForgeServer) repoLabels(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodGet {
		if page, _ := strconv.Atoi(r.URL.Query().Get("page")); page > 1 {
			reply(w, http.StatusOK, []any{})
			return
		}
		reply(w, http.StatusOK, f.labels)
		return
	}
	var in struct{ Name string }
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil || in.Name == "" {
		reply(w, http.StatusUnprocessableEntity, map[string]any{"message": "name is required"})
		return
	}
	l := forgeLabel{ID: int64(len(f.labels) + 1), Name: in.Name}
	f.labels = append(f.labels, l)
	reply(w, http.StatusCreated, l)
}

func (f *ForgeServer) addLabels(w http.ResponseWriter, r *http.Request, number, api string) {
	p := f.pull(number)
	if p == nil {
		reply(w, http.StatusNotFound, map[string]any{"message": "Not Found"})
		return
	}
	var names []string
	if api == "github" {
		if err := json.NewDecoder(r.Body).Decode(&names); err != nil {
			reply(w, http.StatusBadRequest, map[string]any{"message": "Problems parsing JSON"})
			return
		}
	} else {
		var in struct{ Labels []int64 }
		if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
			reply(w, http.StatusBadRequest, map[string]any{"message": "Problems parsing JSON"})
			return
		}
		for _, id := range in.Labels {
			if id < 1 || int(id) > len(f.labels) {
				reply(w, http.StatusUnprocessableEntity, map[string]any{"message": fmt.Sprintf("label %d does not exist", id)})
				return
			}
			names = append(names, f.labels[id-1].Name)
		}
	}
	out := []any{}
	for _, n := range names {
		if !slices.Contains(p.Labels, n) {
			p.Labels = append(p.Labels, n)
		}
	}
	for i, n := range p.Labels {
		out = append(out, map[string]any{"id": i + 1, "name": n})
	}
	reply(w, http.StatusOK, out)
}

func (f *ForgeServer) comment(w http.ResponseWriter, r *http.Request, number string) {
	p := f.pull(number)
	if p == nil {
		reply(w, http.StatusNotFound, map[string]any{"message": "Not Found"})
		return
	}
	var in struct{ Body string }
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil || in.Body == "" {
		reply(w, http.StatusUnprocessableEntity, map[string]any{"message": "body is required"})
		return
	}
	p.Comments = append(p.Comments, in.Body)
	reply(w, http.StatusCreated, map[string]any{"id": len(p.Comments), "body": in.Body})
}

func (f *ForgeServer) pull(number string) *ForgePull {
	n, err := strconv.Atoi(number)
	if err != nil || n < 1 || n > len(f.pulls) {
		return nil
	}
	return f.pulls[n-1]
}

func (f *ForgeServer) repoJSON() map[string]any {
	return map[string]any{"id": 1, "name": f.Name, "full_name": f.Owner + "/" + f.Name, "default_branch": "main",
		"owner": map[string]any{"login": f.Owner}, "html_url": f.URL + "/" + f.Owner + "/" + f.Name}
}

func (f *ForgeServer) pullJSON(p *ForgePull) map[string]any {
	sha, _ := f.branch(p.Head)
	baseSHA, _ := f.branch(p.Base)
	labels := []any{}
	for i, l := range p.Labels {
		labels = append(labels, map[string]any{"id": i + 1, "name": l})
	}
	return map[string]any{
		"id": p.Number, "number": p.Number, "state": p.State, "title": p.Title, "body": p.Body, "labels": labels,
		"html_url": fmt.Sprintf("%s/%s/%s/pull/%d", f.URL, f.Owner, f.Name, p.Number),
		"head":     map[string]any{"ref": p.Head, "sha": sha, "label": f.Owner + ":" + p.Head, "repo": f.repoJSON()},
		"base":     map[string]any{"ref": p.Base, "sha": baseSHA, "label": f.Owner + ":" + p.Base, "repo": f.repoJSON()},
	}
}

// branch returns the commit a branch of the bare repository is at.
func (f *ForgeServer) branch(name string) (string, bool) {
	cmd := exec.Command("git", "rev-parse", "--verify", "--quiet", "refs/heads/"+name)
	cmd.Dir = f.bare
	cmd.Env = append(os.Environ(), GitEnv()...)
	out, err := cmd.Output()
	if err != nil {
		return "", false
	}
	return strings.TrimSpace(string(out)), true
}

func (f *ForgeServer) git(args ...string) error {
	cmd := exec.Command("git", args...)
	cmd.Dir = f.bare
	cmd.Env = append(os.Environ(), GitEnv()...)
	return cmd.Run()
}

func reply(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
