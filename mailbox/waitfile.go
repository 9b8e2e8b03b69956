package mailbox

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/fsnotify/fsnotify"
)

// ErrWatchStopped is returned by FileWatch.Wait when the watch ended (its
// context was cancelled or it was closed) before the file appeared.
var ErrWatchStopped = errors.New("watch stopped before the file appeared")

// FileWatch waits for one file to appear in a directory: a child waiting
// for the response to its own request. It uses the same machinery as
// Watcher (inotify when possible, a safety rescan, polling otherwise, and
// re-arming when the directory is removed and recreated), but watches one
// name and fires once.
type FileWatch struct {
	path    string
	arrived chan struct{}
	stop    context.CancelFunc
	exited  chan struct{}
}

// WatchFile arms a watch on the directory of path and returns once it is
// armed; only then should the caller publish the request whose answer path
// will be, so that the answer cannot slip in between. The watch then
// checks whether path already exists, and waits. It runs until the file
// appears, ctx is done, or Close is called. The error is non-nil only for
// a path that cannot name a file.
func WatchFile(ctx context.Context, path string, opts WatchOptions) (*FileWatch, error) {
	path = filepath.Clean(path)
	dir, name := filepath.Split(path)
	if name == "" || name == "." || name == ".." || dir == "" {
		return nil, fmt.Errorf("watch file %q: not a file path", path)
	}
	n := &dirNotifier{dir: filepath.Clean(dir), enabled: opts.Mode == WatchFSNotify}
	n.report = func(err error) {
		if opts.OnError != nil {
			opts.OnError(err)
		}
	}
	n.arm()
	ctx, stop := context.WithCancel(ctx)
	f := &FileWatch{path: path, arrived: make(chan struct{}), stop: stop, exited: make(chan struct{})}
	go f.run(ctx, n, opts)
	return f, nil
}

// Path is the awaited file.
func (f *FileWatch) Path() string { return f.path }

// Arrived is closed when the file exists. Select on it beside other work,
// such as a child's periodic liveness check of the serving session.
func (f *FileWatch) Arrived() <-chan struct{} { return f.arrived }

// Wait blocks until the file exists (nil), ctx is done (an error wrapping
// ctx.Err(), so errors.Is(err, context.DeadlineExceeded) tells a timeout),
// or the watch stopped first (ErrWatchStopped).
func (f *FileWatch) Wait(ctx context.Context) error {
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
			return fmt.Errorf("wait for %s: %w", f.path, ErrWatchStopped)
		}
	}
}

// Close stops the watch and waits for its goroutine. It is idempotent.
func (f *FileWatch) Close() {
	f.stop()
	<-f.exited
}

func (f *FileWatch) run(ctx context.Context, n *dirNotifier, opts WatchOptions) {
	defer close(f.exited)
	defer n.disarm()
	present := func() bool {
		if _, ok := statFileID(f.path); ok {
			close(f.arrived)
			return true
		}
		return false
	}
	if present() {
		return
	}
	timer := time.NewTimer(n.interval(opts))
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-n.eventC():
			if !ok {
				n.disarm()
				timer.Reset(n.interval(opts))
				continue
			}
			switch filepath.Clean(ev.Name) {
			case f.path:
				if ev.Op != fsnotify.Chmod && present() {
					return
				}
			case n.dir:
				if ev.Has(fsnotify.Remove) || ev.Has(fsnotify.Rename) {
					n.disarm()
					timer.Reset(n.interval(opts))
				}
			}
		case err, ok := <-n.errorC():
			if !ok {
				n.disarm()
				timer.Reset(n.interval(opts))
				continue
			}
			n.report(fmt.Errorf("watch %s: %w; rechecking", n.dir, err))
			if !errors.Is(err, fsnotify.ErrEventOverflow) {
				n.disarm()
				timer.Reset(n.interval(opts))
			}
			if present() {
				return
			}
		case <-timer.C:
			n.check()
			if present() {
				return
			}
			timer.Reset(n.interval(opts))
		}
	}
}
