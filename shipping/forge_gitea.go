package shipping

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	"code.gitea.io/sdk/gitea"
)

// giteaForge is the Forge of a repository on Gitea or Forgejo, through
// their shared REST API.
type giteaForge struct {
	hc          *http.Client
	baseURL     string
	token       string
	owner, name string
}

var _ Forge = (*giteaForge)(nil)

func newGitea(hc *http.Client, baseURL, owner, name, token string) (*giteaForge, error) {
	if baseURL == "" {
		return nil, fmt.Errorf("%w: gitea needs forge.base_url", ErrNoForge)
	}
	return &giteaForge{hc: hc, baseURL: strings.TrimSuffix(baseURL, "/"), token: token, owner: owner, name: name}, nil
}

// client returns a client whose requests carry ctx. The SDK takes its
// context per client, so each call makes one; the version check is
// skipped (the calls used exist in every supported Gitea and Forgejo).
func (g *giteaForge) client(ctx context.Context) (*gitea.Client, error) {
	c, err := gitea.NewClient(g.baseURL, gitea.SetHTTPClient(g.hc), gitea.SetToken(g.token), gitea.SetContext(ctx),
		gitea.SetGiteaVersion(""), gitea.SetUserAgent("orbit"))
	if err != nil {
		return nil, fmt.Errorf("gitea: %w", err)
	}
	return c, nil
}

func (g *giteaForge) OpenFor(ctx context.Context, head string) (*PullRequest, error) {
	c, err := g.client(ctx)
	if err != nil {
		return nil, err
	}
	opts := gitea.ListPullRequestsOptions{State: gitea.StateOpen, ListOptions: gitea.ListOptions{Page: 1, PageSize: 50}}
	for {
		list, resp, err := c.ListRepoPullRequests(g.owner, g.name, opts)
		if err != nil {
			return nil, fmt.Errorf("gitea: listing the open pull requests: %w", err)
		}
		for _, pr := range list {
			if pr.Head != nil && pr.Head.Ref == head && (pr.Head.Repository == nil || pr.Head.Repository.FullName == g.owner+"/"+g.name) {
				return giteaPR(pr), nil
			}
		}
		if resp == nil || resp.NextPage == 0 || len(list) == 0 {
			return nil, nil
		}
		opts.Page = resp.NextPage
	}
}

func (g *giteaForge) Open(ctx context.Context, req NewPullRequest) (*PullRequest, error) {
	c, err := g.client(ctx)
	if err != nil {
		return nil, err
	}
	pr, _, err := c.CreatePullRequest(g.owner, g.name, gitea.CreatePullRequestOption{Head: req.Head, Base: req.Base, Title: req.Title, Body: req.Body})
	if err != nil {
		return nil, fmt.Errorf("gitea: opening a pull request of %s into %s: %w", req.Head, req.Base, err)
	}
	return giteaPR(pr), nil
}

// MarkBlocked labels the pull request with the repository's blocked label,
// made when the repository has none (Gitea labels by id).
func (g *giteaForge) MarkBlocked(ctx context.Context, number int, comment string) error {
	c, err := g.client(ctx)
	if err != nil {
		return err
	}
	id, err := g.blockedLabel(c)
	if err != nil {
		return err
	}
	if _, _, err := c.AddIssueLabels(g.owner, g.name, int64(number), gitea.IssueLabelsOption{Labels: []int64{id}}); err != nil {
		return fmt.Errorf("gitea: labelling pull request #%d blocked: %w", number, err)
	}
	if _, _, err := c.CreateIssueComment(g.owner, g.name, int64(number), gitea.CreateIssueCommentOption{Body: comment}); err != nil {
		return fmt.Errorf("gitea: commenting on pull request #%d: %w", number, err)
	}
	return nil
}

func (g *giteaForge) blockedLabel(c *gitea.Client) (int64, error) {
	opts := gitea.ListLabelsOptions{ListOptions: gitea.ListOptions{Page: 1, PageSize: 50}}
	for {
		labels, resp, err := c.ListRepoLabels(g.owner, g.name, opts)
		if err != nil {
			return 0, fmt.Errorf("gitea: listing labels: %w", err)
		}
		for _, l := range labels {
			if l.Name == blockedLabel {
				return l.ID, nil
			}
		}
		if resp == nil || resp.NextPage == 0 || len(labels) == 0 {
			break
		}
		opts.Page = resp.NextPage
	}
	l, _, err := c.CreateLabel(g.owner, g.name, gitea.CreateLabelOption{Name: blockedLabel, Color: "#d73a4a",
		Description: "Orbit: the shipping run failed; resolve by hand before merging"})
	if err != nil {
		return 0, fmt.Errorf("gitea: making the %s label: %w", blockedLabel, err)
	}
	return l.ID, nil
}

func giteaPR(pr *gitea.PullRequest) *PullRequest {
	out := &PullRequest{Number: int(pr.Index), URL: pr.HTMLURL}
	if pr.Head != nil {
		out.Head = pr.Head.Ref
	}
	if pr.Base != nil {
		out.Base = pr.Base.Ref
	}
	return out
}
