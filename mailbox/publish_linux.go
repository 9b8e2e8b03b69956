package mailbox

import (
	"errors"
	"io/fs"
	"strconv"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// noLinkedPublish is set once an unnamed file cannot be made in TempDir
// (a filesystem or kernel without O_TMPFILE): every later write then
// stages by name, as renameio does, without trying again.
var noLinkedPublish atomic.Bool

// publishLinked writes data into an unnamed file in TempDir (O_TMPFILE)
// and links it at path. Beside renameio's named staging file and rename,
// it takes neither TempDir's lock (twice: the create and the rename) nor
// the filesystem-wide lock of a rename across directories; all it locks
// is path's directory, once, for the link. Under a flood of requests,
// whose writers create and rename in TempDir and requests/ as fast as
// they can, those are the locks a legitimate request and its answer
// queued on (docs/decisions/0032-published-by-link.md). A watcher of
// path's directory sees one Create, for the complete file.
//
// It reports done false, having changed nothing, when the file could not
// be published this way: no unnamed file here (ENOENT for a TempDir that
// is gone included, which the named path recreates), or a link that
// failed, path existing included (then existed is true), since a link
// never replaces. The caller then publishes by name and rename, which
// reports the error if it is real.
func publishLinked(tempDir, path string, data []byte, mode fs.FileMode) (done, existed bool, err error) {
	if noLinkedPublish.Load() {
		return false, false, nil
	}
	fd, err := unix.Open(tempDir, unix.O_TMPFILE|unix.O_WRONLY|unix.O_CLOEXEC, 0o600)
	if err != nil {
		// EISDIR: a kernel older than O_TMPFILE reads it as O_DIRECTORY.
		if errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, unix.EISDIR) || errors.Is(err, unix.EINVAL) {
			noLinkedPublish.Store(true)
		}
		return false, false, nil
	}
	defer unix.Close(fd)
	for rest := data; len(rest) > 0; {
		n, err := unix.Write(fd, rest)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return false, false, &fs.PathError{Op: "write", Path: path, Err: err}
		}
		rest = rest[n:]
	}
	// The mode whatever the umask, and the content on disk before the
	// name, as renameio's WithStaticPermissions and CloseAtomicallyReplace.
	if err := retryInterrupted(func() error { return unix.Fchmod(fd, uint32(mode.Perm())) }); err != nil {
		return false, false, &fs.PathError{Op: "chmod", Path: path, Err: err}
	}
	if err := retryInterrupted(func() error { return unix.Fsync(fd) }); err != nil {
		return false, false, &fs.PathError{Op: "fsync", Path: path, Err: err}
	}
	// linkat(fd, "", AT_EMPTY_PATH) needs CAP_DAC_READ_SEARCH; the
	// descriptor's /proc name does not.
	if err := unix.Linkat(unix.AT_FDCWD, "/proc/self/fd/"+strconv.Itoa(fd), unix.AT_FDCWD, path, unix.AT_SYMLINK_FOLLOW); err != nil {
		if errors.Is(err, unix.ENOENT) && unix.Access("/proc/self/fd", unix.X_OK) != nil {
			// No /proc here (a chroot, a sandbox): every link would
			// fail after the write and its fsync, and the named path
			// pay them again.
			noLinkedPublish.Store(true)
		}
		return false, errors.Is(err, unix.EEXIST), nil
	}
	return true, false, nil
}
