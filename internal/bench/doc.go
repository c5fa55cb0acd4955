// Package bench measures Orbit against the raw parts it is built on, in the
// same run: events appended through package events against raw JetStream
// publishes of the same bytes, and a 200-step job against the raw cost of
// appending the events that job wrote. Figures are reported as ratios so
// that they mean something on any machine.
package bench
