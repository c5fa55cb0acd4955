package gitops

import (
	"context"
	"fmt"
	"strings"
)

// CheckVersion runs `git version` as this package runs git and returns what
// it printed, with an error when git is missing, does not say its version,
// or is older than this package needs.
func CheckVersion(ctx context.Context) (string, error) {
	out, err := runGit(ctx, "", nil, call{args: []string{"version"}, readOnly: true})
	if err != nil {
		return "", fmt.Errorf("running git: %w", err)
	}
	v := strings.TrimSpace(string(out))
	return v, supported(v)
}
