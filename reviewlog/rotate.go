package reviewlog

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/rs/zerolog"
)

// Rotation. pi never rotates its review log, and a flood of 100,000 asks
// grew courier's to 107 MB (issue 14). A log opened with a size cap (the
// default, [DefaultMaxBytes]) is rotated before the line that would take it
// past the cap: the file is renamed to <path>.1, replacing the rotation
// before it, and a new file is started at path, its first line a
// [LogRotated] marker (when, and how large the file rotated away was), by
// which readers tell that older lines are gone. The log and its one
// rotation hold at most about twice the cap; readers (broker audit) read
// <path>.1, then <path>. docs/decisions/0016-review-log-size.md says why
// this rule and not a library.
//
// Several processes may append to one log (a broker and the children an
// operator points at the same file), each through its own descriptor, so
// each line first checks that path still names the file it writes:
//
//   - when it does and the line would take it past the cap, the writer
//     takes an exclusive flock on that file, checks again, renames it and
//     opens a new one. Every process that could rotate that file holds it
//     open and locks the same inode, so only one renames it: a second
//     rename would throw away the first one's rotation;
//   - when path names another file (someone rotated) or none (an operator
//     removed the log), the writer reopens path, creating it 0600.
//
// That check is one lstat per line. A writer holding the renamed file
// between its check and its write appends that one line to <path>.1,
// where readers still find it.

// DefaultMaxBytes is the size cap of a log opened without [WithMaxBytes]:
// 64 MiB is some 80,000 decisions at pi's measured 765 bytes a line, and
// the log with its rotation stays under 128 MiB.
const DefaultMaxBytes = 64 << 20

// quietBytes is the least a log grows between two failed rotations.
const quietBytes = 64 << 10

// RotatedSuffix is appended to a log's path to name its one rotation.
const RotatedSuffix = ".1"

// LogRotated is the event of the marker line a rotation writes first into
// the new file: the line's timestamp is when the log was rotated, and
// KeyPreviousSize how many bytes the file renamed to <path>.1 held then.
// A reader that finds a marker but did not read the file before it (no
// <path>.1, or a <path>.1 that itself starts with a marker, whose own
// predecessor is gone) knows that the lines before that time are missing
// (review finding 8: a flood rotated decisions away without a trace).
// The log writes it itself, so it has no Entry type. Another process's
// line written in the instant between the rename and the marker may come
// before it: readers look for the marker anywhere in a file.
const LogRotated = "review_log_rotated"

// KeyPreviousSize is the detail of a [LogRotated] marker: the size in
// bytes of the file rotated away, when it was renamed.
const KeyPreviousSize = "previousSize"

// WithMaxBytes sets the size cap at which the log is rotated; 0 never
// rotates. Negative values are refused by Open.
func WithMaxBytes(n int64) Option {
	return func(c *config) { c.maxBytes = n }
}

// rotation is the state of a log that rotates; the zero value never does.
type rotation struct {
	path string
	max  int64
	// fi identifies the file being written, to tell whether path still
	// names it.
	fi os.FileInfo
	// quietUntil holds off retrying a rotation that failed until the
	// file has grown by another sixteenth of the cap (quietBytes at
	// least), so that a log that cannot be rotated does not report it on
	// every line.
	quietUntil int64
	// fresh is the size of the file this writer started with its marker:
	// a file no larger holds nothing but the marker and is never rotated,
	// however small the cap, so that it cannot replace the rotation.
	fresh int64
}

// beforeLine makes sure the next line of n bytes goes where it belongs:
// into the file path names, rotated first if the line would take it past
// the cap. It runs under l.mu, and the line is written whatever it
// returns: an error only says the log could not be rotated or reopened.
func (l *Log) beforeLine(n int) error {
	r := &l.rot
	if r.max <= 0 || l.file == nil {
		return nil
	}
	// Two rounds cover a reopen onto a file that is itself full.
	for range 2 {
		cur, err := os.Lstat(r.path)
		switch {
		case errors.Is(err, fs.ErrNotExist):
		case err != nil:
			return fmt.Errorf("stat %s: %w", r.path, err)
		case os.SameFile(cur, r.fi):
			size := cur.Size()
			if size <= r.fresh || size+int64(n) <= r.max || size < r.quietUntil {
				return nil
			}
			if err := l.rotate(n); err != nil {
				r.quietUntil = size + max(r.max/16, quietBytes)
				return err
			}
			continue
		}
		if err := l.reopen(); err != nil {
			return err
		}
	}
	return nil
}

// rotate renames the full file to <path>.1 and opens a new one, starting
// it with a [LogRotated] marker, holding an exclusive lock on the full file
// so that no other process renames it too. Under the lock it checks again:
// another writer may have rotated it already, and then it only reopens.
func (l *Log) rotate(n int) error {
	r := &l.rot
	unlock, err := lockFile(l.file)
	if err != nil {
		return fmt.Errorf("lock %s to rotate it: %w", r.path, err)
	}
	defer unlock()
	cur, err := os.Lstat(r.path)
	renamed := err == nil && os.SameFile(cur, r.fi) && cur.Size()+int64(n) > r.max
	if renamed {
		if err := os.Rename(r.path, r.path+RotatedSuffix); err != nil {
			return fmt.Errorf("rotate %s: %w", r.path, err)
		}
	}
	if err := l.reopen(); err != nil {
		return err
	}
	if !renamed {
		return nil
	}
	return l.writeMarker(cur.Size())
}

// writeMarker writes the [LogRotated] line into the file just opened, in
// the shape of every other line (the prefix, then the details), with the
// size of the file rotated away.
func (l *Log) writeMarker(previous int64) error {
	var stamp [len(timestampLayout) + 8]byte
	var line bytes.Buffer
	zl := zerolog.New(&line)
	zl.Log().
		Bytes(keyTimestamp, l.now().UTC().AppendFormat(stamp[:0], timestampLayout)).
		Str(keyExtension, l.extension).Str(keyStream, Stream).Str(keyEvent, LogRotated).
		Int64(KeyPreviousSize, previous).
		Send()
	if line.Len() == 0 {
		return nil // zerolog's global level is off; writeLine reports it
	}
	if _, err := l.out.Write(line.Bytes()); err != nil {
		l.torn = true
		return fmt.Errorf("write the rotation marker into %s: %w", l.rot.path, err)
	}
	// What this writer finds no larger than this holds only its marker
	// (and any line another process slipped in first).
	if fi, err := l.file.Stat(); err == nil {
		l.rot.fresh = fi.Size()
	}
	return nil
}

// reopen opens path (creating it 0600) as the file lines go to, and
// closes the one before.
func (l *Log) reopen() error {
	r := &l.rot
	f, err := os.OpenFile(r.path, os.O_WRONLY|os.O_CREATE|os.O_APPEND|openNonBlock, 0o600)
	if err != nil {
		return fmt.Errorf("reopen %s: %w", r.path, err)
	}
	if err := restrictFile(f); err != nil {
		f.Close()
		return fmt.Errorf("reopen %s: %w", r.path, err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return fmt.Errorf("reopen %s: %w", r.path, err)
	}
	old := l.file
	l.file, l.out, r.fi, r.quietUntil, r.fresh = f, f, fi, 0, 0
	// A torn line of the old file stays there; the new one starts clean.
	l.torn = false
	if err := old.Close(); err != nil {
		return fmt.Errorf("close the rotated %s: %w", r.path, err)
	}
	return nil
}
