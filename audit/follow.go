package audit

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/seed6639df8c/courier/internal/filewatch"
	"github.com/seed6639df8c/courier/reviewlog"
)

// Follow lists the log at path as List does (its rotation first), then
// keeps listing what is appended to it until ctx is done, when it lists
// the asks still held (Lister.Flush) and returns: `broker audit --list
// --follow`.
//
// A rotation (the log renamed to <path>.1 and a new file started at
// path, package reviewlog) is followed: the old file is read to its end,
// a last line without its newline included, then the new one from its
// start. A log truncated in place is read again from its start, and a log
// that does not exist yet is waited for.
//
// It waits on a watch of the log's directory (internal/filewatch), which
// wakes it when a file there changes, and looks again anyway once the
// watch's rescan or poll interval has passed: no wait is without a
// deadline, and a lost event delays a line by a second at most (by the
// poll interval when opts.Poll, for filesystems whose events do not
// arrive). Memory stays bounded: a line longer than MaxLineBytes is
// skipped, and the Lister remembers a bounded number of asks.
func Follow(ctx context.Context, path string, ls *Lister, opts filewatch.Options) error {
	d := filewatch.NewDir(filepath.Dir(path), opts)
	d.Check() // armed before the first read: a line written after it wakes us
	defer d.Close()

	if f, err := os.Open(path + reviewlog.RotatedSuffix); err == nil {
		err = ListReader(f, ls)
		f.Close()
		if err != nil {
			return fmt.Errorf("audit: %s%s: %w", path, reviewlog.RotatedSuffix, err)
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("audit: %w", err)
	}

	t := &tail{path: path, ls: ls, buf: make([]byte, readBufferSize)}
	defer t.close()
	timer := time.NewTimer(0)
	defer timer.Stop()
	<-timer.C
	aged := time.Now()
	for {
		if err := t.step(); err != nil {
			return err
		}
		if now := time.Now(); now.Sub(aged) >= ageEvery {
			if err := ls.Age(); err != nil {
				return err
			}
			aged = now
		}
		timer.Reset(interval(opts.Timing, d.State()))
		select {
		case <-ctx.Done():
			return ls.Flush()
		case b := <-d.Batches():
			r := d.Handle(b, func(filewatch.Event) {})
			if r.Lost || r.Recheck || r.Err != nil {
				d.Check()
			}
		case <-timer.C:
			d.Check()
		}
	}
}

// ageEvery is how often Follow ages the asks its Lister holds: an ask
// whose lines do not say what was asked is listed once two ages have
// passed, half a second to a second and a wait after its first line. A
// broker writes its entry, which says, moments after its child's, so that
// is long enough; and it is short enough for a person watching.
const ageEvery = 500 * time.Millisecond

// interval is how long Follow waits for an event before it looks anyway.
func interval(t filewatch.Timing, s filewatch.State) time.Duration {
	if wait := t.Next(s); wait > 0 {
		return wait
	}
	return filewatch.DefaultRescan // Rescan < 0 asks the owner to rescan: we are the owner
}

// tail reads one log file as it grows, handing complete lines to ls.
type tail struct {
	path string
	ls   *Lister
	f    *os.File // nil until the log exists
	off  int64    // bytes of f read
	buf  []byte
	// partial is a line read in part, waiting for its newline; skipping
	// says the line being read is past MaxLineBytes and is dropped whole.
	partial  []byte
	skipping bool
}

// step reads what was appended since the last step, and follows a
// rotation or truncation of the log.
func (t *tail) step() error {
	// Twice at most: a rotation seen now is followed to the new file at
	// once; another one after it waits for the next step.
	for range 2 {
		if t.f == nil {
			f, err := os.Open(t.path)
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			if err != nil {
				return fmt.Errorf("audit: %w", err)
			}
			t.f, t.off = f, 0
		}
		if err := t.drain(); err != nil {
			return err
		}
		now, err := os.Stat(t.path)
		if errors.Is(err, fs.ErrNotExist) {
			// Renamed away and the new file not made yet: the old one is
			// read to its end; the next step opens the new one.
			return nil
		}
		if err != nil {
			return fmt.Errorf("audit: %w", err)
		}
		held, err := t.f.Stat()
		if err != nil {
			return fmt.Errorf("audit: %w", err)
		}
		switch {
		case !os.SameFile(now, held):
			// Rotated: what was appended to the old file before the
			// writers moved on is read (drain, above); its last line
			// may lack its newline, having been torn.
			if err := t.flush(); err != nil {
				return err
			}
			t.close()
			continue
		case now.Size() < t.off:
			// Truncated in place: read it again from its start.
			if _, err := t.f.Seek(0, io.SeekStart); err != nil {
				return fmt.Errorf("audit: %w", err)
			}
			t.off, t.partial, t.skipping = 0, t.partial[:0], false
			continue
		}
		return nil
	}
	return nil
}

// drain reads f to its end.
func (t *tail) drain() error {
	for {
		n, err := t.f.Read(t.buf)
		t.off += int64(n)
		if ferr := t.feed(t.buf[:n]); ferr != nil {
			return ferr
		}
		if errors.Is(err, io.EOF) || n == 0 {
			return nil
		}
		if err != nil {
			return fmt.Errorf("audit: read %s: %w", t.path, err)
		}
	}
}

// feed splits p into lines, carrying a line read in part to the next
// call.
func (t *tail) feed(p []byte) error {
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			t.hold(p)
			return nil
		}
		t.hold(p[:i])
		p = p[i+1:]
		if err := t.flush(); err != nil {
			return err
		}
	}
	return nil
}

// hold keeps p as part of the line being read, unless the line is past
// MaxLineBytes, which is then dropped whole.
func (t *tail) hold(p []byte) {
	if t.skipping {
		return
	}
	if len(t.partial)+len(p) > MaxLineBytes+len("\r") {
		t.partial, t.skipping = t.partial[:0], true
		return
	}
	t.partial = append(t.partial, p...)
}

// flush ends the line being read and hands it to ls.
func (t *tail) flush() error {
	line, skipped := bytes.TrimSuffix(t.partial, []byte("\r")), t.skipping
	t.partial, t.skipping = t.partial[:0], false
	if skipped || len(line) == 0 {
		return nil
	}
	return t.ls.Line(line)
}

func (t *tail) close() {
	if t.f != nil {
		t.f.Close()
		t.f = nil
	}
}
