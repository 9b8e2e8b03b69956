//go:build unix

package reviewlog

import (
	"fmt"
	"os"
	"syscall"
)

// openNonBlock keeps Open from hanging on a FIFO that has no reader; on a
// regular file the flag has no effect.
const openNonBlock = syscall.O_NONBLOCK

// restrictDir drops the group and other bits of the log's directory when the
// directory is the log's own (see Open). A directory Open cannot judge (not
// readable, say) is left alone rather than failing Open: the log file itself
// is already 0600, so the directory's mode guards only names and sizes.
func restrictDir(dir string) error {
	fi, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("stat directory %s: %w", dir, err)
	}
	perm := fi.Mode().Perm()
	if perm&0o077 == 0 || fi.Mode()&os.ModeSticky != 0 {
		return nil
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok || int(st.Uid) != os.Geteuid() {
		return nil
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	for _, e := range entries {
		if !e.Type().IsRegular() {
			return nil
		}
	}
	if err := os.Chmod(dir, perm&0o700); err != nil {
		return fmt.Errorf("restrict directory %s: %w", dir, err)
	}
	return nil
}
