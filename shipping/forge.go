package shipping

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"time"

	"github.com/orbitrun/orbit/assets"
)

// PullRequest is a pull request as a forge reports it.
type PullRequest struct {
	Number int    `json:"number"`
	URL    string `json:"url"`
	Head   string `json:"head"`
	Base   string `json:"base"`
}

// NewPullRequest asks a forge for a pull request of Head into Base.
type NewPullRequest struct {
	Title string
	Body  string
	Head  string
	Base  string
}

// Forge is the pull-request API of the forge a repository's origin lives
// on. Implementations: GitHub's REST API (github.com and GitHub
// Enterprise) and Gitea's (Gitea, Forgejo).
type Forge interface {
	// OpenFor returns the open pull request whose head is the branch head
	// of the repository itself, or nil when there is none.
	OpenFor(ctx context.Context, head string) (*PullRequest, error)
	// Open opens a pull request; the body is sent as it is given.
	Open(ctx context.Context, pr NewPullRequest) (*PullRequest, error)
	// MarkBlocked labels a pull request blocked and comments why.
	MarkBlocked(ctx context.Context, number int, comment string) error
}

// ForgeSettings are what the engine knows of the forge: the project
// configuration's forge section and the token from the engine's
// environment (already told to the redactor).
type ForgeSettings struct {
	Config assets.ForgeConfig
	Token  string
}

// blockedLabel is the label a pull request of a failed run carries.
const blockedLabel = "blocked"

// forgeTimeout bounds one forge request without a deadline of its own.
const forgeTimeout = 30 * time.Second

// ErrNoForge is a pull request asked of a Service that has no forge
// configured or no token for it.
var ErrNoForge = errors.New("no forge to open pull requests on")

// forgeFor returns the Forge of the repository whose origin URL is
// remoteURL, per the engine's forge settings.
func (s *Service) forgeFor(remoteURL string) (Forge, error) {
	if s.cfg.Forge == nil {
		return nil, fmt.Errorf("%w: the engine has no forge settings", ErrNoForge)
	}
	fs := s.cfg.Forge()
	c := fs.Config
	if fs.Token == "" {
		return nil, fmt.Errorf("%w: %s is not set in the engine's environment (forge.token_env names the variable)", ErrNoForge, c.Token())
	}
	repo := c.Repository
	if repo == "" {
		var ok bool
		if repo, ok = repositoryOf(remoteURL); !ok {
			return nil, fmt.Errorf("%w: cannot tell owner/name from the remote URL %q; set forge.repository", ErrNoForge, remoteURL)
		}
	}
	owner, name, _ := strings.Cut(repo, "/")
	hc := &http.Client{Timeout: forgeTimeout}
	switch c.Kind {
	case "", assets.ForgeGitHub:
		return newGitHub(hc, c.BaseURL, owner, name, fs.Token)
	case assets.ForgeGitea:
		return newGitea(hc, c.BaseURL, owner, name, fs.Token)
	}
	return nil, fmt.Errorf("%w: forge.kind %q", ErrNoForge, c.Kind)
}

// scpLike is git's user@host:path form of a remote URL.
var scpLike = regexp.MustCompile(`^[A-Za-z0-9_.-]+@[A-Za-z0-9_.-]+:(.+)$`)

// repositoryOf reads owner/name from a remote URL: the last two elements of
// its path, without .git.
func repositoryOf(remoteURL string) (string, bool) {
	p := remoteURL
	if m := scpLike.FindStringSubmatch(remoteURL); m != nil {
		p = m[1]
	} else if u, err := url.Parse(remoteURL); err == nil && u.Host != "" {
		p = u.Path
	} else {
		return "", false
	}
	parts := strings.Split(strings.Trim(strings.TrimSuffix(strings.TrimSuffix(p, "/"), ".git"), "/"), "/")
	if len(parts) < 2 || parts[len(parts)-2] == "" || parts[len(parts)-1] == "" {
		return "", false
	}
	return parts[len(parts)-2] + "/" + parts[len(parts)-1], true
}
