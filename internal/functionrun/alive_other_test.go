//go:build !unix

package functionrun

func alive(pid int) bool { return false }
