package filewatch

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"sync/atomic"
	"syscall"

	"github.com/fsnotify/fsnotify"
)

// ErrOverflow is reported when the kernel's event queue overflowed and
// events were lost. It is fsnotify's sentinel, so that one errors.Is holds
// whichever source a Dir reads.
var ErrOverflow = fsnotify.ErrEventOverflow

// Options configure a Dir or a File.
type Options struct {
	// Poll leaves inotify alone and only polls, at Timing.Poll: for NFS
	// and bind mounts where events from other machines or the host never
	// arrive.
	Poll bool
	// Timing is when to look again without an event.
	Timing Timing
	// OnError, if set, hears of trouble the watcher recovered from: a
	// directory that could not be watched (the watcher polls instead),
	// and, from a File, an overflow or a failed watch. It runs on the
	// watcher's goroutine and must not block. A missing directory is
	// normal and not reported.
	OnError func(error)
}

// Op says what an event tells of the name it carries.
type Op uint8

const (
	// Create: created, or renamed into the directory.
	Create Op = 1 << iota
	// Write: written in place.
	Write
	// Remove: removed.
	Remove
	// Rename: renamed away.
	Rename
)

// Event is a hint that a name in a Dir's directory changed.
type Event struct {
	Name string // the base name in the directory
	Path string // the Dir's path and Name
	Op   Op
}

// Batch is what one read of a Dir's watch brought. Hand it to the Dir's
// Handle before receiving the next one from Batches: the reader reuses
// its memory then.
type Batch struct {
	data []byte         // inotify records
	ev   fsnotify.Event // or one event, from fsnotify
	err  error          // or the watch's failure (or overflow, from fsnotify)
}

// Result is what a Batch said beyond its events.
type Result struct {
	// Overflow: the kernel's queue overflowed and events were lost; the
	// watch stays. Read the directory again.
	Overflow bool
	// Lost: the directory was removed or renamed away. The watch is gone
	// until Check finds a directory at the path again; meanwhile the
	// Dir's State is Unarmed.
	Lost bool
	// Err: the watch failed. It was released, and Check arms a new one;
	// read the directory again.
	Err error
	// Recheck: while the directory was missing, the way to it was made
	// again (or the ancestor watched for that went away). Call Check and
	// read the directory again now, as a timer tick would.
	Recheck bool
}

// Dir watches one directory for its owner's goroutine: it arms a watch
// when the directory exists, learns when the directory is removed or
// replaced, arms again on whatever is at the path later, and falls back to
// polling when no watch can be had. Events are hints: the owner reads the
// directory on start, after every Result that asks for it, and whenever
// Timing.Next(State) has passed, and calls Check then.
//
// A Dir is used by one goroutine, apart from Watching and Arms.
type Dir struct {
	path   string
	poll   bool
	report func(error)
	src    source

	lastErr string // the last arming error reported, to report each once

	watching atomic.Bool
	awaiting atomic.Bool
	arms     atomic.Int64
}

// source is what a Dir learns events from: inotify on Linux
// (dir_inotify.go), fsnotify's kqueue elsewhere (dir_fsnotify.go).
type source interface {
	// arm puts the watch on the directory at the path now. moved reports
	// that it is on another directory than before (a first watch
	// included); an error wrapping fs.ErrNotExist that there is none.
	arm() (moved bool, err error)
	armed() bool
	// awaiting reports that the directory is missing and a watch on its
	// nearest existing ancestor will tell when the way to it is made.
	awaiting() bool
	// batches delivers what the watch reads; nil without one.
	batches() <-chan Batch
	handle(b Batch, fn func(Event)) Result
	// close releases the watch, its instance and its goroutine.
	close()
}

// NewDir prepares a watch of dir; nothing is armed before Check. dir need
// not exist.
func NewDir(dir string, opts Options) *Dir {
	dir = filepath.Clean(dir)
	return newDirWith(dir, opts, newSource(dir))
}

func newDirWith(dir string, opts Options, src source) *Dir {
	d := &Dir{path: dir, poll: opts.Poll, report: opts.OnError, src: src}
	if d.report == nil {
		d.report = func(error) {}
	}
	return d
}

// Path is the watched directory.
func (d *Dir) Path() string { return d.path }

// Check arms the watch when there is none, and moves it when the
// directory at the path is not the one watched (removed and made again,
// or replaced while the event that would tell was lost or held back).
// Failure leaves it unarmed, reported once until it changes, and polled
// at Timing.Poll; the next Check tries again.
func (d *Dir) Check() {
	if d.poll {
		return
	}
	moved, err := d.src.arm()
	switch {
	case err == nil:
		d.lastErr = ""
		if moved {
			d.arms.Add(1)
		}
	case notThere(err):
		// Not there (yet): normal, and not reported. On inotify the
		// source now watches the nearest existing ancestor, and its event
		// is a Result.Recheck; elsewhere the directory is polled for.
	default:
		if msg := err.Error(); msg != d.lastErr {
			d.lastErr = msg
			d.report(fmt.Errorf("watch %s: %w; polling instead", d.path, err))
		}
	}
	d.publish()
}

// notThere says err is a path's absence: it, or a directory on the way to
// it, is not there (ENOENT, ENOTDIR). A directory removed between a look
// and a watch fails so.
func notThere(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR)
}

// publish makes the watch's state readable from other goroutines.
func (d *Dir) publish() {
	d.watching.Store(d.src.armed())
	d.awaiting.Store(d.src.awaiting())
}

// State is what the Dir has to go on until the next look.
func (d *Dir) State() State {
	switch {
	case d.poll:
		return Polling
	case d.src.armed():
		return Armed
	case d.src.awaiting():
		return Awaiting
	}
	return Unarmed
}

// Batches delivers what the watch reads, for Handle; nil while there is
// nothing to read.
func (d *Dir) Batches() <-chan Batch {
	if d.poll {
		return nil
	}
	return d.src.batches()
}

// Handle calls fn with each event of b that names a file in the
// directory, and says what else b told.
func (d *Dir) Handle(b Batch, fn func(Event)) Result {
	r := d.src.handle(b, fn)
	d.publish()
	return r
}

// Close releases the watch and waits for its goroutine. It is idempotent.
func (d *Dir) Close() {
	d.src.close()
	d.watching.Store(false)
	d.awaiting.Store(false)
}

// Watching reports whether a watch is armed. Safe from any goroutine.
func (d *Dir) Watching() bool { return d.watching.Load() }

// Awaiting reports that the directory is missing and a watch on its
// nearest existing ancestor will tell when it is back (State Awaiting).
// Safe from any goroutine.
func (d *Dir) Awaiting() bool { return d.awaiting.Load() }

// Arms counts the watches armed on a directory new to the Dir: the first,
// and one for each directory that replaced a watched one. Safe from any
// goroutine.
func (d *Dir) Arms() int64 { return d.arms.Load() }
