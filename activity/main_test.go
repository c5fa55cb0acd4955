package activity_test

import (
	"os"
	"testing"

	"github.com/orbitrun/orbit/internal/sandbox"
)

// TestMain lets the test binary be the sandbox's re-executed step, which
// a shell step with sandbox: agent runs in.
func TestMain(m *testing.M) {
	sandbox.Init()
	os.Exit(m.Run())
}
