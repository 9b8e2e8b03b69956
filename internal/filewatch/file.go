package filewatch

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"time"
)

// ErrStopped is returned when a watch ended (its context was cancelled,
// it was closed, or a Shared stopped) before the file appeared.
var ErrStopped = errors.New("watch stopped before the file appeared")

// File waits for one file to appear: a Dir on its directory that watches
// one name and fires once.
type File struct {
	path    string
	name    string
	arrived chan struct{}
	stop    context.CancelFunc
	exited  chan struct{}
}

// WatchFile arms a watch on the directory of path and returns once it is
// armed; only then should the caller publish whatever the file will
// answer, so that the file cannot slip in between. The watch then checks
// whether path already exists, and waits. It runs until the file appears,
// ctx is done, or Close is called. The error is non-nil only for a path
// that cannot name a file.
func WatchFile(ctx context.Context, path string, opts Options) (*File, error) {
	path = filepath.Clean(path)
	dir, name := filepath.Split(path)
	if name == "" || name == "." || name == ".." || dir == "" {
		return nil, fmt.Errorf("watch file %q: not a file path", path)
	}
	d := NewDir(dir, opts)
	d.Check()
	ctx, stop := context.WithCancel(ctx)
	f := &File{path: path, name: name, arrived: make(chan struct{}), stop: stop, exited: make(chan struct{})}
	go f.run(ctx, d, opts.Timing.withOwnRescan(), d.report)
	return f, nil
}

// Path is the awaited file.
func (f *File) Path() string { return f.path }

// Arrived is closed when the file exists.
func (f *File) Arrived() <-chan struct{} { return f.arrived }

// Wait blocks until the file exists (nil), ctx is done (an error wrapping
// ctx.Err()), or the watch stopped first (an error wrapping ErrStopped).
func (f *File) Wait(ctx context.Context) error {
	select {
	case <-f.arrived:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("wait for %s: %w", f.path, ctx.Err())
	case <-f.exited:
		select {
		case <-f.arrived:
			return nil
		default:
			return fmt.Errorf("wait for %s: %w", f.path, ErrStopped)
		}
	}
}

// Close stops the watch and waits for its goroutine. It is idempotent.
func (f *File) Close() {
	f.stop()
	<-f.exited
}

func (f *File) run(ctx context.Context, d *Dir, t Timing, report func(error)) {
	defer close(f.exited)
	defer d.Close()
	present := func() bool {
		if _, ok := Stat(f.path); ok {
			close(f.arrived)
			return true
		}
		return false
	}
	if present() {
		return
	}
	timer := time.NewTimer(t.Next(d.State()))
	defer timer.Stop()
	named := false
	handle := func(ev Event) { named = named || ev.Name == f.name }
	for {
		select {
		case <-ctx.Done():
			return
		case b := <-d.Batches():
			named = false
			r := d.Handle(b, handle)
			switch {
			case r.Err != nil:
				report(fmt.Errorf("watch %s: %w; rechecking", d.Path(), r.Err))
			case r.Overflow:
				report(fmt.Errorf("watch %s: %w; rechecking", d.Path(), ErrOverflow))
			}
			if r.Lost || r.Recheck {
				// Watch the directory again, or the ancestor that tells
				// when it is back, before looking for the file.
				d.Check()
			}
			if r.Lost || r.Recheck || r.Err != nil {
				timer.Reset(t.Next(d.State()))
			}
			if (named || r.Overflow || r.Err != nil || r.Recheck) && present() {
				return
			}
		case <-timer.C:
			d.Check()
			if present() {
				return
			}
			timer.Reset(t.Next(d.State()))
		}
	}
}
