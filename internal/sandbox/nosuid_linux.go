package sandbox

import (
	"fmt"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The instructions of a classic BPF program (linux/filter.h).
const (
	bpfLoadWord = 0x20 // BPF_LD | BPF_W | BPF_ABS
	bpfJumpEq   = 0x15 // BPF_JMP | BPF_JEQ | BPF_K
	bpfJumpGE   = 0x35 // BPF_JMP | BPF_JGE | BPF_K
	bpfJumpSet  = 0x45 // BPF_JMP | BPF_JSET | BPF_K
	bpfReturn   = 0x06 // BPF_RET | BPF_K
	// Offsets in struct seccomp_data: the syscall's number, its
	// architecture, its arguments (the low half of each on a
	// little-endian machine).
	seccompNr   = 0
	seccompArch = 4
	seccompArgs = 16
	// x32Bit marks an x32 syscall on amd64, whose numbers are others.
	x32Bit = 0x40000000
	// setIDBits are S_ISUID and S_ISGID.
	setIDBits = 0o6000
)

// modeArg is a syscall that sets a file's mode and the argument that
// holds it.
type modeArg struct {
	nr  uint32
	arg uint32
}

// noSetIDFilter is a seccomp filter that refuses (EPERM) every syscall
// setting a file's setuid or setgid bit: chmod and its kin, and the
// creating open, creat and mknod calls with either bit in their mode;
// openat2, whose mode is in a struct a filter cannot read, gets ENOSYS
// (libc falls back to openat). So does systemd's RestrictSUIDSGID.
// Syscalls of another architecture (i386 or x32 on amd64) are refused.
func noSetIDFilter() []unix.SockFilter {
	deny := func(errno syscall.Errno) uint32 { return unix.SECCOMP_RET_ERRNO | uint32(errno) }
	f := []unix.SockFilter{
		{Code: bpfLoadWord, K: seccompArch},
		{Code: bpfJumpEq, Jt: 1, K: auditArch},
		{Code: bpfReturn, K: deny(syscall.EPERM)},
		{Code: bpfLoadWord, K: seccompNr},
		{Code: bpfJumpGE, Jf: 1, K: x32Bit},
		{Code: bpfReturn, K: deny(syscall.EPERM)},
		{Code: bpfJumpEq, Jf: 1, K: unix.SYS_OPENAT2},
		{Code: bpfReturn, K: deny(syscall.ENOSYS)},
	}
	for _, m := range modeArgs {
		f = append(f,
			unix.SockFilter{Code: bpfJumpEq, Jf: 4, K: m.nr},
			unix.SockFilter{Code: bpfLoadWord, K: seccompArgs + 8*m.arg},
			unix.SockFilter{Code: bpfJumpSet, Jf: 1, K: setIDBits},
			unix.SockFilter{Code: bpfReturn, K: deny(syscall.EPERM)},
			unix.SockFilter{Code: bpfReturn, K: unix.SECCOMP_RET_ALLOW})
	}
	return append(f, unix.SockFilter{Code: bpfReturn, K: unix.SECCOMP_RET_ALLOW})
}

// forbidSetID installs noSetIDFilter on this thread, which then execs the
// program: a file the program makes or changes is never setuid or setgid.
// Its work tree is on the host, where such a file would run as its owner
// for anyone: the engine's user, or root, whose files a root engine's
// agent (nobody) makes through its mapped work tree. It needs
// no_new_privs, which dropCapabilities sets first.
func forbidSetID() error {
	if modeArgs == nil {
		return nil
	}
	f := noSetIDFilter()
	prog := unix.SockFprog{Len: uint16(len(f)), Filter: &f[0]}
	if _, _, e := syscall.RawSyscall(syscall.SYS_PRCTL, unix.PR_SET_SECCOMP, unix.SECCOMP_MODE_FILTER, uintptr(unsafe.Pointer(&prog))); e != 0 {
		return fmt.Errorf("installing the seccomp filter against setuid files: %w", e)
	}
	return nil
}
