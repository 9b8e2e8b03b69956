package forward

import "golang.org/x/sys/unix"

// The shared response watcher speaks inotify(7) directly: fsnotify cannot
// leave out the child's own deletions, which would wake every waiter once
// more per answer.
const (
	inCreate           = unix.IN_CREATE
	inMovedTo          = unix.IN_MOVED_TO
	inDeleteSelf       = unix.IN_DELETE_SELF
	inMoveSelf         = unix.IN_MOVE_SELF
	inOnlyDir          = unix.IN_ONLYDIR
	inQOverflow        = unix.IN_Q_OVERFLOW
	inIgnored          = unix.IN_IGNORED
	inUnmount          = unix.IN_UNMOUNT
	inCloexec          = unix.IN_CLOEXEC
	inNonblock         = unix.IN_NONBLOCK
	sizeofInotifyEvent = unix.SizeofInotifyEvent
)

// inotifyInit is inotify_init1(2); tests make it fail as the per-user
// instance limit does.
var inotifyInit = unix.InotifyInit1

func inotifyAddWatch(fd int, path string, mask uint32) (int, error) {
	return unix.InotifyAddWatch(fd, path, mask)
}

func inotifyRmWatch(fd int, wd uint32) (int, error) {
	return unix.InotifyRmWatch(fd, wd)
}
