package mailbox

import (
	"context"

	"github.com/seed6639df8c/courier/internal/filewatch"
)

// ErrWatchStopped is returned by FileWatch.Wait when the watch ended (its
// context was cancelled or it was closed) before the file appeared.
var ErrWatchStopped = filewatch.ErrStopped

// FileWatch waits for one file to appear in a directory: a child waiting
// for the response to its own request. It uses the same machinery as
// Watcher (inotify when possible, a safety rescan, polling otherwise, and
// re-arming when the directory is removed and recreated: internal/filewatch),
// but watches one name and fires once.
type FileWatch struct {
	f *filewatch.File
}

// WatchFile arms a watch on the directory of path and returns once it is
// armed; only then should the caller publish the request whose answer path
// will be, so that the answer cannot slip in between. The watch then
// checks whether path already exists, and waits. It runs until the file
// appears, ctx is done, or Close is called. The error is non-nil only for
// a path that cannot name a file.
func WatchFile(ctx context.Context, path string, opts WatchOptions) (*FileWatch, error) {
	f, err := filewatch.WatchFile(ctx, path, opts.filewatch())
	if err != nil {
		return nil, err
	}
	return &FileWatch{f: f}, nil
}

// Path is the awaited file.
func (w *FileWatch) Path() string { return w.f.Path() }

// Arrived is closed when the file exists. Select on it beside other work,
// such as a child's periodic liveness check of the serving session.
func (w *FileWatch) Arrived() <-chan struct{} { return w.f.Arrived() }

// Wait blocks until the file exists (nil), ctx is done (an error wrapping
// ctx.Err(), so errors.Is(err, context.DeadlineExceeded) tells a timeout),
// or the watch stopped first (ErrWatchStopped).
func (w *FileWatch) Wait(ctx context.Context) error { return w.f.Wait(ctx) }

// Close stops the watch and waits for its goroutine. It is idempotent.
func (w *FileWatch) Close() { w.f.Close() }
