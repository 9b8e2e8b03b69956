package mailbox

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"
)

// CleanupSession removes the session's inbox directories once they are
// empty, in pi's order (docs/GLOSSARY.md, "cleanup order"): requests/ if empty; then responses/, but only
// if requests/ is gone, because a child that still has a request there is
// waiting for its answer in responses/; then the session directory if empty.
// Both broker (after a drain) and child (after an exchange) call it, so the
// races between them are expected: a directory that is already gone or not
// yet empty is left alone without error.
func (l Layout) CleanupSession(session string) error {
	if l.Isolation != nil {
		// The inbox is the broker's in the isolation mode, kept while it
		// serves: a child may not remove its directories, and could not
		// recreate them for its next ask.
		return nil
	}
	dir, err := l.SessionDir(session)
	if err != nil {
		return err
	}
	requests := filepath.Join(dir, requestsDirName)
	if err := removeEmptyDir(requests); err != nil {
		return err
	}
	if _, err := os.Lstat(requests); !errors.Is(err, fs.ErrNotExist) {
		if err != nil {
			return fmt.Errorf("clean up mailbox: %w", err)
		}
		return nil // requests/ is still in use
	}
	if err := removeEmptyDir(filepath.Join(dir, responsesDirName)); err != nil {
		return err
	}
	return removeEmptyDir(dir)
}

// removeEmptyDir is rmdir(2): it never removes content. ENOENT means someone
// else cleaned up first; ENOTEMPTY (EEXIST on some systems) means the
// directory is in use.
func removeEmptyDir(dir string) error {
	err := unix.Rmdir(dir)
	switch {
	case err == nil, errors.Is(err, unix.ENOENT), errors.Is(err, unix.ENOTEMPTY), errors.Is(err, unix.EEXIST):
		return nil
	}
	return fmt.Errorf("clean up mailbox: %w", &fs.PathError{Op: "rmdir", Path: dir, Err: err})
}

// SweepTemp deletes staging files in TempDir that were last modified before
// now-olderThan: the leftovers of writers killed between creating a temp
// file and renaming it. Nothing else ever refers to a temp file, so an old
// one is garbage; olderThan only has to exceed the longest write. It
// returns how many files it removed. A missing TempDir is not an error.
func (l Layout) SweepTemp(now time.Time, olderThan time.Duration) (int, error) {
	dir := l.TempDir()
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("sweep mailbox temp files: %w", err)
	}
	cutoff := now.Add(-olderThan)
	removed := 0
	var errs []error
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		info, err := e.Info()
		if err != nil || !info.ModTime().Before(cutoff) {
			continue // gone already, or possibly still being written
		}
		err = os.Remove(filepath.Join(dir, e.Name()))
		switch {
		case err == nil:
			removed++
		case !errors.Is(err, fs.ErrNotExist):
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return removed, fmt.Errorf("sweep mailbox temp files: %w", err)
	}
	return removed, nil
}
