//go:build unix

package reviewlog

import (
	"errors"
	"os"
	"syscall"
)

// lockFile takes an exclusive flock on f, waiting for another process's
// (held for a rename and an open: microseconds).
func lockFile(f *os.File) (unlock func(), err error) {
	rc, err := f.SyscallConn()
	if err != nil {
		return nil, err
	}
	flock := func(how int) (err error) {
		cerr := rc.Control(func(fd uintptr) {
			for {
				if err = syscall.Flock(int(fd), how); !errors.Is(err, syscall.EINTR) {
					return
				}
			}
		})
		return errors.Join(cerr, err)
	}
	if err := flock(syscall.LOCK_EX); err != nil {
		return nil, err
	}
	return func() { _ = flock(syscall.LOCK_UN) }, nil
}
