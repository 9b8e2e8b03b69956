// Package fileperm decides whether a file the broker trusts could have
// been written by someone else: its config, a grant journal, an authorizer
// plugin's binary. Whoever can write one of them decides asks, so a file
// that group or others may write, or that another user owns, is refused
// with its path, what was found and the command that fixes it, never
// used with a warning (issue 14: a config writable by group or others was
// served without a word).
//
// Root may own a config or a plugin binary (an install under /etc or
// /opt): root can do anything to the broker anyway. The same holds for the
// directory that names the file, since whoever may write it may rename
// another file into its place; a sticky directory (/tmp) lets nobody
// replace a name they do not own.
package fileperm

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// ErrRefused is wrapped by every *Error.
var ErrRefused = errors.New("refused: others could have written it")

// Owners says who may own a trusted file or its directory.
type Owners int

const (
	// Self is the process's effective uid only: a file the process
	// writes itself (a grant journal).
	Self Owners = iota
	// SelfOrRoot is the effective uid or root: a file an operator
	// installs (a config, a plugin binary).
	SelfOrRoot
)

func (o Owners) allows(uid int) bool {
	return uid == os.Geteuid() || o == SelfOrRoot && uid == 0
}

func (o Owners) String() string {
	if o == SelfOrRoot {
		return fmt.Sprintf("uid %d (this process's user) or root", os.Geteuid())
	}
	return fmt.Sprintf("uid %d (this process's user)", os.Geteuid())
}

// Error refuses one file or directory.
type Error struct {
	// What names the file's role: "config", "plugin binary", "grant
	// journal".
	What string
	// Path is the file or directory refused.
	Path string
	// Problem says what was found, e.g. "mode 0664 lets group or others
	// write it".
	Problem string
	// Fix says what to do, e.g. "chmod go-w /etc/courier.json".
	Fix string
}

// Error reads "refusing <what> <path>: <problem>; <fix>".
func (e *Error) Error() string {
	msg := fmt.Sprintf("refusing %s %s: %s", e.What, e.Path, e.Problem)
	if e.Fix != "" {
		msg += "; " + e.Fix
	}
	return msg
}

// Unwrap returns ErrRefused.
func (e *Error) Unwrap() error { return ErrRefused }

// CheckFile refuses the file at path, described by fi (the stat of the
// open file, so that what is checked is what is read), when group or
// others may write it or owners do not include its owner.
func CheckFile(what, path string, fi fs.FileInfo, owners Owners) error {
	if perm := fi.Mode().Perm(); perm&0o022 != 0 {
		return &Error{What: what, Path: path,
			Problem: fmt.Sprintf("mode %04o lets group or others write it, and whoever writes it decides asks", perm),
			Fix:     "chmod go-w " + path}
	}
	if uid, ok := Owner(fi); ok && !owners.allows(uid) {
		return &Error{What: what, Path: path,
			Problem: fmt.Sprintf("owned by uid %d, expected %s", uid, owners),
			Fix:     "use a file of your own"}
	}
	return nil
}

// CheckDir refuses the directory that holds path when group or others may
// write it (without the sticky bit, which keeps them from replacing a name
// they do not own) or owners do not include its owner: either could put
// another file in path's place. When path is a symbolic link, the
// directory of every hop of its chain is checked, up to the file it
// resolves to: whoever may replace any link of the chain chooses the file
// read (review finding 11: conf.json → shared/link in an open directory →
// real.json passed when only the first and last directories were checked).
func CheckDir(what, path string, owners Owners) error {
	p := path
	for range maxHops {
		// The directory as the kernel resolves it, so that a relative
		// link target is taken from where it really is.
		dir := filepath.Dir(p)
		if real, err := filepath.EvalSymlinks(dir); err == nil {
			dir = real
		}
		if err := checkDir(what, path, dir, owners); err != nil {
			return err
		}
		hop := filepath.Join(dir, filepath.Base(p))
		fi, err := os.Lstat(hop)
		if err != nil || fi.Mode()&fs.ModeSymlink == 0 {
			// A missing file is the caller's to report: it opened or
			// stat()ed it already.
			return nil
		}
		target, err := os.Readlink(hop)
		if err != nil {
			return fmt.Errorf("%s %s: link %s: %w", what, path, hop, err)
		}
		if !filepath.IsAbs(target) {
			target = filepath.Join(dir, target)
		}
		p = filepath.Clean(target)
	}
	return &Error{What: what, Path: path,
		Problem: fmt.Sprintf("it is a chain of more than %d symbolic links", maxHops),
		Fix:     "point it at the file directly"}
}

// maxHops bounds a chain of links; the kernel gives up after 40.
const maxHops = 40

func checkDir(what, path, dir string, owners Owners) error {
	fi, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("%s %s: directory: %w", what, path, err)
	}
	if perm := fi.Mode().Perm(); perm&0o022 != 0 && fi.Mode()&fs.ModeSticky == 0 {
		return &Error{What: what, Path: path,
			Problem: fmt.Sprintf("its directory %s has mode %04o, which lets group or others put another file in its place", dir, perm),
			Fix:     "chmod go-w " + dir}
	}
	if uid, ok := Owner(fi); ok && !owners.allows(uid) {
		return &Error{What: what, Path: path,
			Problem: fmt.Sprintf("its directory %s is owned by uid %d, expected %s", dir, uid, owners),
			Fix:     "keep it in a directory of your own"}
	}
	return nil
}
