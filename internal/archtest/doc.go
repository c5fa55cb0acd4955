// Package archtest holds the tests that keep Orbit's floor plan as
// ARCHITECTURE.md draws it: every package says what it is for in its
// package comment (what go doc prints), and every package imports only
// the packages below it in the layers (layers_test.go lists, per package,
// the packages of ours it may import), and ARCHITECTURE.md stays a map of
// at most 400 lines whose package table names every package
// (map_test.go). It has no code of its own.
package archtest
