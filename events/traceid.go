package events

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// RunTraceID is the OpenTelemetry trace id (32 hex digits) of the runs
// under root, the run at the top of a chain of job.invoke steps: the trace
// of traceparent, the W3C traceparent root was requested with, when it is
// one, else derived from root's id, so that every engine that reads the
// log names the same trace.
func RunTraceID(root, traceparent string) string {
	if id, ok := TraceparentTraceID(traceparent); ok {
		return id
	}
	d := sha256.Sum256([]byte("orbit.trace\x00" + root))
	return hex.EncodeToString(d[:16])
}

// TraceparentTraceID returns the trace id of a W3C traceparent of version
// 00 (00-<32 hex>-<16 hex>-<2 hex>), and whether it is one with a trace id
// and span id that are not all zeros.
func TraceparentTraceID(traceparent string) (string, bool) {
	parts := strings.Split(strings.TrimSpace(traceparent), "-")
	if len(parts) != 4 || parts[0] != "00" || len(parts[1]) != 32 || len(parts[2]) != 16 || len(parts[3]) != 2 {
		return "", false
	}
	for _, p := range parts[1:] {
		if _, err := hex.DecodeString(p); err != nil || strings.ToLower(p) != p {
			return "", false
		}
	}
	if strings.Trim(parts[1], "0") == "" || strings.Trim(parts[2], "0") == "" {
		return "", false
	}
	return parts[1], true
}
