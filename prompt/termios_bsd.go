//go:build darwin || dragonfly || freebsd || netbsd || openbsd

package prompt

import "golang.org/x/sys/unix"

const (
	ioctlGetTermios = unix.TIOCGETA
	ioctlSetTermios = unix.TIOCSETA
	// posixVDisable turns a special character off (the BSDs' _POSIX_VDISABLE).
	posixVDisable = 0xff
)
