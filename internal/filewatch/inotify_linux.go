package filewatch

import "golang.org/x/sys/unix"

// The inotify(7) event bits this package asks for or reads.
const (
	inCreate           = unix.IN_CREATE
	inMovedTo          = unix.IN_MOVED_TO
	inMovedFrom        = unix.IN_MOVED_FROM
	inModify           = unix.IN_MODIFY
	inDelete           = unix.IN_DELETE
	inDeleteSelf       = unix.IN_DELETE_SELF
	inMoveSelf         = unix.IN_MOVE_SELF
	inOnlyDir          = unix.IN_ONLYDIR
	inQOverflow        = unix.IN_Q_OVERFLOW
	inIgnored          = unix.IN_IGNORED
	inUnmount          = unix.IN_UNMOUNT
	sizeofInotifyEvent = unix.SizeofInotifyEvent
)

// inotifyInit is inotify_init1(2), non-blocking so that the instance is
// read through the runtime's poller.
func inotifyInit() (int, error) { return unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK) }

// inotifyAddWatch is inotify_add_watch(2); a variable so that a test can
// remove a directory between a look at it and its watch.
var inotifyAddWatch = func(fd int, path string, mask uint32) (int, error) {
	return unix.InotifyAddWatch(fd, path, mask)
}

func inotifyRmWatch(fd int, wd uint32) error {
	_, err := unix.InotifyRmWatch(fd, wd)
	return err
}

// newSource: a Dir learns its events from inotify.
func newSource(path string) source { return newInotifySource(path) }
