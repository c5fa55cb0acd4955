//go:build !linux

package sandbox

import (
	"runtime"
	"syscall"
)

func sysProcAttr() *syscall.SysProcAttr { return nil }

func available() (bool, string, string) {
	return false, "namespaces are Linux's; this is " + runtime.GOOS, ""
}

// Init does nothing where there is no sandbox to set up.
func Init() {}
