package grants

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"
)

// lockWait bounds how long a write waits for another process's: an edit
// holds the lock for a read and a write, milliseconds, so a lock held
// longer belongs to a process that is stuck.
const lockWait = 5 * time.Second

// lock takes the exclusive lock every writer of the journal's directory
// takes (flock on the directory itself, so no lock file is left behind).
// With create, a missing directory is created first; without it, a
// missing directory is an error wrapping os.ErrNotExist. The caller holds
// j.mu; flock is per open file, so two Journals of one process exclude
// each other too.
func (j *Journal) lock(create bool) (unlock func(), err error) {
	dir := filepath.Dir(j.path)
	if create {
		ensure := j.layout.EnsureDir
		if j.vouched {
			ensure = func(string) error { return j.layout.EnsureVouchedDir(j.uid) }
		}
		if err := ensure(dir); err != nil {
			return nil, fmt.Errorf("grant journal: %w: %w", ErrNotSaved, err)
		}
	}
	var fd int
	err = retryEINTR(func() error {
		var err error
		fd, err = unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("grant journal %s: %w: %w", j.path, ErrNotSaved, &os.PathError{Op: "open", Path: dir, Err: err})
	}
	for deadline := time.Now().Add(lockWait); ; {
		err := retryEINTR(func() error { return unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB) })
		if err == nil {
			return func() {
				_ = unix.Flock(fd, unix.LOCK_UN)
				_ = unix.Close(fd)
			}, nil
		}
		if !errors.Is(err, unix.EWOULDBLOCK) || time.Now().After(deadline) {
			unix.Close(fd)
			if errors.Is(err, unix.EWOULDBLOCK) {
				err = fmt.Errorf("another process has held the lock on %s for more than %s", dir, lockWait)
			}
			return nil, fmt.Errorf("grant journal %s: %w: %w", j.path, ErrNotSaved, err)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func retryEINTR(f func() error) error {
	for {
		if err := f(); !errors.Is(err, unix.EINTR) {
			return err
		}
	}
}

// stamp identifies one version of the journal file: its inode, size and
// modification time. Every write renames a new file into place, so a
// rewritten journal has a new inode even when its size and time repeat.
// The zero stamp is no file.
type stamp struct {
	info os.FileInfo
}

// statJournal stamps the file at path as it is now.
func statJournal(path string) (stamp, error) {
	fi, err := os.Lstat(path)
	if errors.Is(err, os.ErrNotExist) {
		return stamp{}, nil
	}
	if err != nil {
		return stamp{}, err
	}
	return stamp{info: fi}, nil
}

// same reports whether s and o are one version of the file.
func (s stamp) same(o stamp) bool {
	if s.info == nil || o.info == nil {
		return s.info == nil && o.info == nil
	}
	return os.SameFile(s.info, o.info) && s.info.Size() == o.info.Size() && s.info.ModTime().Equal(o.info.ModTime())
}
