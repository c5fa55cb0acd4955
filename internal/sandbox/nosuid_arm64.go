//go:build linux

package sandbox

import "golang.org/x/sys/unix"

const auditArch = unix.AUDIT_ARCH_AARCH64

// modeArgs are arm64's syscalls that set a file's mode.
var modeArgs = []modeArg{
	{unix.SYS_FCHMOD, 1}, {unix.SYS_FCHMODAT, 2}, {unix.SYS_FCHMODAT2, 2}, {unix.SYS_OPENAT, 3}, {unix.SYS_MKNODAT, 2},
}
