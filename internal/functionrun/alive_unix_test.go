//go:build unix

package functionrun

import "syscall"

// alive reports whether a process with pid exists (a zombie counts: it was not waited for).
func alive(pid int) bool { return syscall.Kill(pid, 0) == nil }
