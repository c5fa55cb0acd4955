package gitops

import (
	"context"
	"fmt"
	"strings"
)

// The identity of commits in a repository that has none configured.
const (
	FallbackName  = "Orbit Groundhog"
	FallbackEmail = "groundhog@orbit.invalid"
)

// identityEnv returns the GIT_AUTHOR_* and GIT_COMMITTER_* variables for a
// commit. Each takes the value git itself would use from the environment
// or the configuration (GIT_AUTHOR_NAME, author.name, user.name; for e-mail
// addresses also EMAIL), and the fallback identity where there is none:
// git would otherwise guess one from the host name, or refuse to commit.
func (r *Repo) identityEnv(ctx context.Context) ([]string, error) {
	env := gitEnv(r.env)
	// When the environment names the whole identity the configuration
	// cannot change it: no need to read it.
	var fromEnv []string
	for _, k := range []string{"GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL"} {
		if v := lookupEnv(env, k); strings.TrimSpace(v) != "" {
			fromEnv = append(fromEnv, k+"="+v)
		}
	}
	if len(fromEnv) == 4 {
		return fromEnv, nil
	}
	out, err := r.run(ctx, call{
		args:     []string{"config", "-z", "--get-regexp", `^(user|author|committer)\.(name|email)$`},
		readOnly: true,
	})
	if err != nil && exitCode(err) != 1 { // 1: none of them is set
		return nil, fmt.Errorf("reading the configured identity: %w", err)
	}
	cfg := map[string]string{}
	for _, e := range nulFields(out) {
		k, v, _ := strings.Cut(e, "\n")
		cfg[strings.ToLower(k)] = strings.TrimSpace(v) // the last one wins, as in git
	}
	first := func(vals ...string) string {
		for _, v := range vals {
			if strings.TrimSpace(v) != "" {
				return v
			}
		}
		return ""
	}
	return []string{
		"GIT_AUTHOR_NAME=" + first(lookupEnv(env, "GIT_AUTHOR_NAME"), cfg["author.name"], cfg["user.name"], FallbackName),
		"GIT_AUTHOR_EMAIL=" + first(lookupEnv(env, "GIT_AUTHOR_EMAIL"), cfg["author.email"], cfg["user.email"], lookupEnv(env, "EMAIL"), FallbackEmail),
		"GIT_COMMITTER_NAME=" + first(lookupEnv(env, "GIT_COMMITTER_NAME"), cfg["committer.name"], cfg["user.name"], FallbackName),
		"GIT_COMMITTER_EMAIL=" + first(lookupEnv(env, "GIT_COMMITTER_EMAIL"), cfg["committer.email"], cfg["user.email"], lookupEnv(env, "EMAIL"), FallbackEmail),
	}, nil
}

// identity returns identityEnv, read once per operation: *cache holds it
// for the operation's next commit.
func (r *Repo) identity(ctx context.Context, cache *[]string) ([]string, error) {
	if *cache != nil {
		return *cache, nil
	}
	env, err := r.identityEnv(ctx)
	if err != nil {
		return nil, err
	}
	*cache = env
	return env, nil
}
