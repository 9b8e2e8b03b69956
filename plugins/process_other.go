//go:build !linux

package plugins

import (
	"os"
	"syscall"
)

// sysProcAttr puts the plugin in a process group of its own. There is no
// Pdeathsig outside Linux: a plugin outlives a broker killed with SIGKILL
// unless it watches its parent.
func sysProcAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }

// execPath executes the path itself: without /proc, the checksum and the
// exec are two steps, so keep plugins in a directory only root can write.
func execPath(_ *os.File, path string) string { return path }

func killGroup(pid int) { _ = signalGroup(pid, syscall.SIGKILL) }
