//go:build !linux

package forward

import "errors"

// Without inotify there is no shared response watcher: inotifyInit fails,
// so every Forward watches its own response with mailbox.WatchFile
// (fsnotify's kqueue, or polling), as a Client did before the watcher was
// shared. The constants only let the shared watcher's code compile.
const (
	inCreate           = 0x100
	inMovedTo          = 0x80
	inDeleteSelf       = 0x400
	inMoveSelf         = 0x800
	inOnlyDir          = 0x1000000
	inQOverflow        = 0x4000
	inIgnored          = 0x8000
	inUnmount          = 0x2000
	inCloexec          = 0x80000
	inNonblock         = 0x800
	sizeofInotifyEvent = 16
)

var errNoInotify = errors.New("inotify is Linux only")

var inotifyInit = func(int) (int, error) { return -1, errNoInotify }

func inotifyAddWatch(int, string, uint32) (int, error) { return -1, errNoInotify }

func inotifyRmWatch(int, uint32) (int, error) { return -1, errNoInotify }
