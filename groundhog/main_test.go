package groundhog_test

import (
	"os"
	"testing"

	"github.com/orbitrun/orbit/internal/sandbox"
)

// TestMain lets the test binary be the sandbox's re-executed step, for the
// verifier's sandboxed commands.
func TestMain(m *testing.M) {
	sandbox.Init()
	os.Exit(m.Run())
}
