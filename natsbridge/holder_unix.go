//go:build unix

package natsbridge

import (
	"fmt"
	"os"
	"syscall"
)

// dirIdentity is " (dir DEV:INO)" of dir, or "" when it cannot be read:
// what tells this root from another directory at the same path on another
// machine or container (Holder).
func dirIdentity(dir string) string {
	fi, err := os.Stat(dir)
	if err != nil {
		return ""
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return ""
	}
	return fmt.Sprintf(" (dir %d:%d)", uint64(st.Dev), uint64(st.Ino))
}
