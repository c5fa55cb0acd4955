// Package scripts holds the shell scripts the Makefile runs (the demos,
// make binsize, make fuzz, make fsyncs, make git-count, the cluster demo),
// record-protocol.sh, which records the stored logs of each step protocol
// (internal/compat/testdata/protocol), and the test that checks that
// fuzz.sh fuzzes every fuzz target the module declares. It has no Go code
// of its own.
package scripts
