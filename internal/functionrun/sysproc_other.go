//go:build !linux

package functionrun

import "syscall"

// sysProcAttr: elsewhere the runner's exit at the end of its request pipe is the safeguard.
func sysProcAttr() *syscall.SysProcAttr { return nil }
