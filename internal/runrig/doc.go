// Package runrig runs jobs on a real engine for the tests of the
// orchestration (package executor) and of the workers: an orchestrator
// and a worker on an embedded log in a temp dir, a job parsed from YAML,
// a run submitted and waited for, and the events of its history; and,
// for the tests of what reads the views (shipping, retention), live views
// folded from a log. It is imported by tests alone.
package runrig
