package shipping

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	"github.com/google/go-github/v93/github"
)

// gitHub is the Forge of a repository on GitHub or GitHub Enterprise,
// through its REST API.
type gitHub struct {
	c           *github.Client
	owner, name string
}

var _ Forge = (*gitHub)(nil)

// newGitHub returns the GitHub forge of owner/name. baseURL is empty for
// github.com, else a GitHub Enterprise server (go-github adds /api/v3/
// when it is missing).
func newGitHub(hc *http.Client, baseURL, owner, name, token string) (*gitHub, error) {
	opts := []github.ClientOptionsFunc{github.WithHTTPClient(hc), github.WithAuthToken(token), github.WithUserAgent("orbit")}
	if baseURL != "" {
		base := strings.TrimSuffix(baseURL, "/") + "/"
		opts = append(opts, github.WithEnterpriseURLs(base, base))
	}
	c, err := github.NewClient(opts...)
	if err != nil {
		return nil, fmt.Errorf("github: %w", err)
	}
	return &gitHub{c: c, owner: owner, name: name}, nil
}

func (g *gitHub) OpenFor(ctx context.Context, head string) (*PullRequest, error) {
	opts := &github.PullRequestListOptions{State: "open", Head: g.owner + ":" + head, ListOptions: github.ListOptions{PerPage: 100}}
	for {
		list, resp, err := g.c.PullRequests.List(ctx, g.owner, g.name, opts)
		if err != nil {
			return nil, fmt.Errorf("github: listing the open pull requests of %s: %w", head, err)
		}
		for _, pr := range list {
			if pr.GetHead().GetRef() == head && pr.GetHead().GetRepo().GetFullName() == g.owner+"/"+g.name {
				return gitHubPR(pr), nil
			}
		}
		if resp.NextPage == 0 {
			return nil, nil
		}
		opts.Page = resp.NextPage
	}
}

func (g *gitHub) Open(ctx context.Context, req NewPullRequest) (*PullRequest, error) {
	pr, _, err := g.c.PullRequests.Create(ctx, g.owner, g.name, github.CreatePullRequest{
		Title: github.Ptr(req.Title), Head: req.Head, Base: req.Base, Body: github.Ptr(req.Body),
	})
	if err != nil {
		return nil, fmt.Errorf("github: opening a pull request of %s into %s: %w", req.Head, req.Base, err)
	}
	return gitHubPR(pr), nil
}

func (g *gitHub) MarkBlocked(ctx context.Context, number int, comment string) error {
	if _, _, err := g.c.Issues.AddLabelsToIssue(ctx, g.owner, g.name, number, []string{blockedLabel}); err != nil {
		return fmt.Errorf("github: labelling pull request #%d blocked: %w", number, err)
	}
	if _, _, err := g.c.Issues.CreateComment(ctx, g.owner, g.name, number, github.IssueCommentRequest{Body: comment}); err != nil {
		return fmt.Errorf("github: commenting on pull request #%d: %w", number, err)
	}
	return nil
}

func gitHubPR(pr *github.PullRequest) *PullRequest {
	return &PullRequest{Number: pr.GetNumber(), URL: pr.GetHTMLURL(), Head: pr.GetHead().GetRef(), Base: pr.GetBase().GetRef()}
}
