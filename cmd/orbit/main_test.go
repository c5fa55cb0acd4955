package main_test

import (
	"testing"

	"github.com/orbitrun/orbit/internal/sandbox"
	"github.com/orbitrun/orbit/internal/testkit"
)

// TestMain removes the orbit binary the tests built when they end.
func TestMain(m *testing.M) {
	// Lets a test ask whether this machine can sandbox an agent
	// (sandbox.Available probes by re-executing the test binary).
	sandbox.Init()
	testkit.Main(m)
}
