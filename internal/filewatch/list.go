package filewatch

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// List returns the names in dir that keep accepts (every name when keep
// is nil), in the order the directory gives them, from one read of the
// directory. An error wrapping fs.ErrNotExist means there is no dir.
func List(dir string, keep func(name string) bool) ([]string, error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	names, err := f.Readdirnames(-1)
	if err != nil || keep == nil {
		return names, err
	}
	kept := names[:0]
	for _, name := range names {
		if keep(name) {
			kept = append(kept, name)
		}
	}
	return kept, nil
}

// ID tells one file from a later one under the same name. The change time
// is part of it because inode numbers are reused at once on tmpfs and
// ext4, and because a write in place changes it too.
type ID struct {
	dev, ino    uint64
	csec, cnsec int64
}

// Stat identifies the file at path without following a link. It reports
// false only when nothing is there; a path that exists but cannot be
// examined reports true with a zero ID, so that it is taken as present
// and possibly new.
func Stat(path string) (ID, bool) {
	var st unix.Stat_t
	err := ignoringEINTR(func() error { return unix.Lstat(path, &st) })
	switch {
	case notThere(err):
		return ID{}, false
	case err != nil:
		return ID{}, true
	}
	return ID{dev: uint64(st.Dev), ino: st.Ino, csec: st.Ctim.Sec, cnsec: st.Ctim.Nsec}, true
}

// StatDir identifies the directory at path, following a link; false when
// there is no directory there. The change time is left out: a directory's
// changes with every file added or removed.
func StatDir(path string) (ID, bool) {
	var st unix.Stat_t
	if err := ignoringEINTR(func() error { return unix.Stat(path, &st) }); err != nil || st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return ID{}, false
	}
	return ID{dev: uint64(st.Dev), ino: st.Ino}, true
}

func ignoringEINTR(fn func() error) error {
	for {
		err := fn()
		if !errors.Is(err, unix.EINTR) {
			return err
		}
	}
}
