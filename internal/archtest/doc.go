// Package archtest holds the tests that keep Orbit's floor plan as
// ARCHITECTURE.md draws it: every package says what it is for in its
// package comment (what go doc prints), and every package imports only
// the packages below it in the layers (layers_test.go lists, per package,
// the packages of ours it may import). It has no code of its own.
package archtest
