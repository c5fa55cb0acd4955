//go:build linux

package sandbox

import "golang.org/x/sys/unix"

const auditArch = unix.AUDIT_ARCH_X86_64

// modeArgs are amd64's syscalls that set a file's mode.
var modeArgs = []modeArg{
	{unix.SYS_CHMOD, 1}, {unix.SYS_FCHMOD, 1}, {unix.SYS_FCHMODAT, 2}, {unix.SYS_FCHMODAT2, 2},
	{unix.SYS_OPEN, 2}, {unix.SYS_OPENAT, 3}, {unix.SYS_CREAT, 1}, {unix.SYS_MKNOD, 1}, {unix.SYS_MKNODAT, 2},
}
