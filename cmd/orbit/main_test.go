package main_test

import (
	"testing"

	"github.com/orbitrun/orbit/internal/testkit"
)

// TestMain removes the orbit binary the tests built when they end.
func TestMain(m *testing.M) { testkit.Main(m) }
