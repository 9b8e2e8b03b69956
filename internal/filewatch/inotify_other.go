//go:build !linux

package filewatch

import (
	"errors"
	"fmt"
)

// Without inotify, OpenInotify fails: a Dir watches through fsnotify
// (kqueue) instead, and a Shared cannot be started, so its owner waits for
// each file on its own. The constants only let the inotify code compile.
const (
	inCreate           = 0x100
	inMovedTo          = 0x80
	inMovedFrom        = 0x40
	inModify           = 0x2
	inDelete           = 0x200
	inDeleteSelf       = 0x400
	inMoveSelf         = 0x800
	inOnlyDir          = 0x1000000
	inQOverflow        = 0x4000
	inIgnored          = 0x8000
	inUnmount          = 0x2000
	sizeofInotifyEvent = 16
)

var errNoInotify = fmt.Errorf("inotify is Linux only: %w", errors.ErrUnsupported)

func inotifyInit() (int, error) { return -1, errNoInotify }

func inotifyAddWatch(int, string, uint32) (int, error) { return -1, errNoInotify }

func inotifyRmWatch(int, uint32) error { return errNoInotify }

// newSource: a Dir learns its events from fsnotify (kqueue).
func newSource(path string) source { return newFSNotifySource(path) }
