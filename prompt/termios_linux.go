package prompt

import "golang.org/x/sys/unix"

const (
	ioctlGetTermios = unix.TCGETS
	ioctlSetTermios = unix.TCSETS
	// posixVDisable turns a special character off (Linux's _POSIX_VDISABLE).
	posixVDisable = 0
)
