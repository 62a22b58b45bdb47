package functionrun

import "syscall"

// sysProcAttr puts a function process in its own process group, so that a terminal's Ctrl-C
// reaches the supervisor only (which then stops its processes), and has the kernel kill it
// should the supervisor die without doing so.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
