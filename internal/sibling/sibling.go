// Package sibling runs, in this process's place, the build of this binary
// with a feature linked in: `child` runs courier-child-nats and `broker`
// runs courier-broker-nats when asked for NATS (decisions 0028 and 0034).
// The sibling is found beside this binary's real path and is trusted as
// this binary is: it must not be this binary itself, nor a file others
// could have written.
package sibling

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"github.com/seed6639df8c/courier/internal/fileperm"
)

// EnvMarker is set, to the real path of the binary that ran it, in the
// environment of a sibling Exec runs. A build without the feature that
// finds it set was itself run as the sibling (a copy of, or a link to, the
// binary without the feature): running its sibling again would loop, each
// exec starting the next, for ever. A build with the feature calls Clear
// at start, so that what it starts does not inherit the marker.
const EnvMarker = "COURIER_SIBLING_OF"

// ErrNotTheSibling is wrapped by Exec's refusal of a sibling that is not
// built with the feature.
var ErrNotTheSibling = errors.New("not built with the feature it was run for")

// Exec replaces this process with the binary name beside this binary's
// real path, run with args (its command line after its path) and this
// process's environment with EnvMarker set. It returns only an error: the
// sibling is missing (wrapping fs.ErrNotExist, with its path), is this
// binary or a build without the feature (ErrNotTheSibling), could have
// been written by others (fileperm.ErrRefused), or could not be run.
func Exec(name string, args []string) error {
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("%s beside this binary, whose path is unknown: %w", name, err)
	}
	if real, err := filepath.EvalSymlinks(self); err == nil {
		self = real
	}
	path := filepath.Join(filepath.Dir(self), name)
	if from := os.Getenv(EnvMarker); from != "" {
		return fmt.Errorf("%s, run by %s as %s, is %w: it would run itself again", self, from, name, ErrNotTheSibling)
	}
	real, err := filepath.EvalSymlinks(path)
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%s is missing: %w", path, fs.ErrNotExist)
	}
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if real == self {
		return fmt.Errorf("%s is this binary (%s), %w", path, self, ErrNotTheSibling)
	}
	fi, err := os.Stat(path)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if err := fileperm.CheckFile("sibling binary", path, fi, fileperm.SelfOrRoot); err != nil {
		return err
	}
	if err := fileperm.CheckDir("sibling binary", path, fileperm.SelfOrRoot); err != nil {
		return err
	}
	env := append(os.Environ(), EnvMarker+"="+self)
	if err := syscall.Exec(path, append([]string{path}, args...), env); err != nil {
		return fmt.Errorf("running %s: %w", path, err)
	}
	return nil // not reached: Exec returns only on failure
}

// Clear removes EnvMarker from this process's environment. A build with
// the feature calls it at start.
func Clear() { os.Unsetenv(EnvMarker) }
