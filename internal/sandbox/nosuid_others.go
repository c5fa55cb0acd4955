//go:build linux && !amd64 && !arm64

package sandbox

// auditArch and modeArgs are known for amd64 and arm64 only: elsewhere
// forbidSetID installs no filter.
const auditArch = 0

var modeArgs []modeArg
