//go:build unix

package notify

import (
	"os/exec"
	"syscall"
)

// ownGroup runs cmd in a process group of its own, and makes cancelling
// it kill that whole group: a shell script's children die with it, and
// Ctrl-C at the broker's terminal does not reach them.
func ownGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error {
		return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
}
