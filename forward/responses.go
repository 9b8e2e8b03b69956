package forward

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"time"

	"github.com/seed6639df8c/courier/internal/filewatch"
	"github.com/seed6639df8c/courier/mailbox"
)

// responseWatcher is a Client's shared watch of its parents' responses/
// directories: one inotify instance and one goroutine, which hands each
// response file name to the one Forward waiting for it
// (docs/decisions/0009-shared-response-watcher.md). It watches the
// responses/ directory of every parent the Client has forwarded to.
type responseWatcher = filewatch.Shared

// watcherLinger is how long a shared watcher with nobody waiting stays
// armed for the next ask before it releases its inotify instance and
// goroutine. Asks back to back keep it; a Client nobody closes (a test
// that makes one per ask) holds an instance of the per-user 128 hardly
// longer than a watch of its own would.
var watcherLinger = 100 * time.Millisecond // a variable for tests

// openInotify creates a shared watcher's inotify instance; tests count it,
// or make it fail as the per-user instance limit does.
var openInotify = filewatch.OpenInotify

// responseWait is how one Forward learns that its answer may have
// arrived: through its Client's shared watcher, or through a watch of its
// own (mailbox.WatchFile), which also polls when inotify is unavailable or
// polling was chosen.
type responseWait struct {
	path   string
	opts   mailbox.WatchOptions
	shared *filewatch.Waiter
	own    *mailbox.FileWatch
}

// signal fires when the answer may be there. The shared watcher's signals
// repeat, one per event; a watch of its own fires once and stays fired.
func (r *responseWait) signal() <-chan struct{} {
	if r.shared != nil {
		return r.shared.C()
	}
	return r.own.Arrived()
}

// repeats reports whether signal fires again for a later file: whether a
// false alarm (nothing there after all) may simply be waited out.
func (r *responseWait) repeats() bool { return r.shared != nil }

// woken is called after signal fired. It reports whether the answer may be
// there; false means the shared watcher ended, and a watch of its own now
// stands in, which looks for the file at once.
func (r *responseWait) woken(ctx context.Context) bool {
	if r.shared == nil || !r.shared.Ended() {
		return true
	}
	own, err := mailbox.WatchFile(ctx, r.path, r.opts)
	if err != nil {
		return true // not a file path: cannot happen for a ResponsePath
	}
	r.shared, r.own = nil, own
	return false
}

func (r *responseWait) stop() {
	if r.shared != nil {
		r.shared.Done()
	}
	if r.own != nil {
		r.own.Close()
	}
}

// rearm makes sure the wait watches the inbox that exists now, after the
// caller recreated it. A failure is left to the watcher's next rescan; a
// watch of its own re-arms by itself.
func (r *responseWait) rearm() {
	if r.shared != nil {
		r.shared.Rearm()
	}
}

// sharedWatcher is the Client's response watcher, started on first use;
// nil when the Client polls, is closed, or inotify could not be had
// lately (then each Forward watches on its own, as a Client did before
// the watcher was shared).
func (c *Client) sharedWatcher() *responseWatcher {
	if c.Watch.Mode != mailbox.WatchFSNotify {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil
	}
	if w := c.watcher; w != nil && !w.Stopped() {
		return w
	}
	if c.watcher != nil {
		c.retire(c.watcher)
	}
	c.watcher = nil
	now := time.Now()
	if now.Before(c.retryWatcher) {
		return nil
	}
	in, err := openInotify()
	if err != nil {
		// Most likely the per-user instance limit; try again later,
		// not on every ask.
		c.retryWatcher = now.Add(orDefault(c.Watch.RescanInterval, mailbox.DefaultRescanInterval))
		c.watchFailed(err)
		return nil
	}
	c.watcher = filewatch.NewShared(in, filewatch.SharedOptions{
		Timing:  filewatch.Timing{Rescan: c.Watch.RescanInterval, Poll: c.Watch.PollInterval},
		Linger:  watcherLinger,
		OnError: c.watchFailed,
	})
	return c.watcher
}

// watchFailed reports that the shared watcher could not be had, or
// failed: the asks fall back to watches of their own.
func (c *Client) watchFailed(err error) {
	if c.Watch.OnError != nil {
		c.Watch.OnError(fmt.Errorf("watch responses: %w; watching each response on its own", err))
	}
}

// Close stops the Client's shared response watcher and waits for its
// goroutine. Forwards still waiting go on with watches of their own, and
// later ones watch on their own too: Forward keeps working after Close.
// A Client that is never closed releases the watcher by itself once no
// ask has been waiting for a moment (watcherLinger, at most a
// RescanInterval later). Close is idempotent.
func (c *Client) Close() {
	c.mu.Lock()
	c.closed = true
	w := c.watcher
	c.watcher = nil
	retired := c.retired
	c.retired = nil
	c.mu.Unlock()
	if w != nil {
		w.Close()
	}
	for _, r := range retired {
		<-r.Exited() // stopped already: its goroutine is returning
	}
}

// retire keeps a watcher that stopped by itself until its goroutine has
// returned, dropping those that have. Called with c.mu held.
func (c *Client) retire(w *responseWatcher) {
	kept := c.retired[:0]
	for _, r := range append(c.retired, w) {
		select {
		case <-r.Exited():
		default:
			kept = append(kept, r)
		}
	}
	c.retired = kept
}

// armWait prepares the inbox if needed and arms the wait for respPath. It
// runs before the request is written, so the answer cannot slip past.
func (c *Client) armWait(ctx context.Context, target, respPath string) (*responseWait, error) {
	r := &responseWait{path: respPath, opts: c.Watch}
	for attempt := 0; attempt < 2; attempt++ {
		w := c.sharedWatcher()
		if w == nil {
			break
		}
		wt, err := w.Await(respPath)
		if errors.Is(err, fs.ErrNotExist) {
			// A first ask to this parent, or an inbox removed by
			// someone's cleanup; otherwise the watch proved it exists.
			if err := c.Layout.EnsureInbox(target); err != nil {
				return nil, &inboxError{err}
			}
			wt, err = w.Await(respPath)
		}
		if err == nil {
			r.shared = wt
			return r, nil
		}
		if !errors.Is(err, filewatch.ErrStopped) {
			break
		}
	}
	if err := c.Layout.EnsureInbox(target); err != nil {
		return nil, &inboxError{err}
	}
	own, err := mailbox.WatchFile(ctx, respPath, c.Watch)
	if err != nil {
		return nil, err
	}
	r.own = own
	return r, nil
}

// inboxError is a failure to create the parent's inbox directories.
type inboxError struct{ err error }

func (e *inboxError) Error() string { return e.err.Error() }
func (e *inboxError) Unwrap() error { return e.err }
