package forward

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/seed6639df8c/courier/mailbox"
)

// responseEvents are the inotify events a response watch asks for. A
// response arrives by a rename into responses/ (courier stages in tmp/,
// pi renames its own temporary file) or, from a writer that does not
// stage, by a create; the child's own deletions wake nobody. The self
// events say that the directory the watch is on is no longer at its path.
const responseEvents = inCreate | inMovedTo | inDeleteSelf | inMoveSelf | inOnlyDir

// watcherLinger is how long a shared watcher with nobody waiting stays
// armed for the next ask before it releases its inotify instance and
// goroutine. Asks back to back keep it; a Client nobody closes (a test
// that makes one per ask) holds an instance of the per-user 128 hardly
// longer than a watch of its own would.
var watcherLinger = 100 * time.Millisecond // a variable for tests

// errWatcherStopped: the shared watcher stopped (Close, idle, or its
// inotify instance failed) before the wait was registered.
var errWatcherStopped = errors.New("response watcher stopped")

// responseWatcher is one inotify instance shared by every Forward of a
// Client: a single goroutine reads it and hands each response file name to
// the one Forward waiting for that name, so N requesters waiting on the
// same responses/ directory cost one wake-up per answer, not N. It watches
// the responses/ directory of every parent the Client has forwarded to.
//
// Events are hints, never the record: while anyone waits, every waiter's
// path is checked every RescanInterval (PollInterval while a directory it
// waits in is not watched, having been removed), and at once after an
// event overflow, so a lost event delays an answer, never loses it.
type responseWatcher struct {
	file *os.File
	// conn reaches the descriptor for inotify_add_watch and rm_watch;
	// Control holds it open for the call, so a concurrent Close cannot
	// let the number be reused under us.
	conn   syscall.RawConn
	opts   mailbox.WatchOptions
	exited chan struct{}

	stopped atomic.Bool // no new waits; set under mu

	mu        sync.Mutex
	dirs      map[string]*responseDir // by path
	byWD      map[int32]*responseDir
	waiting   int
	idleSince time.Time
	linger    time.Duration // watcherLinger when it started
}

// responseDir is one watched responses/ directory.
type responseDir struct {
	path    string
	wd      int32 // -1 while no watch is on the directory at path
	waiters map[string]*responseWaiter
}

// responseWaiter is one Forward's registration for its response file.
type responseWaiter struct {
	w    *responseWatcher
	dir  *responseDir
	name string
	path string
	// wake is signalled when an event names the file, when a rescan
	// finds it, and when the watcher ends (ended is then set).
	wake  chan struct{}
	ended atomic.Bool
}

func (wt *responseWaiter) notify() {
	select {
	case wt.wake <- struct{}{}:
	default: // a signal is pending already
	}
}

// newResponseWatcher creates the inotify instance and starts its reader.
// It fails when inotify cannot be had, typically at the per-user instance
// limit.
func newResponseWatcher(opts mailbox.WatchOptions) (*responseWatcher, error) {
	fd, err := inotifyInit(inCloexec | inNonblock)
	if err != nil {
		return nil, fmt.Errorf("watch responses: inotify: %w", err)
	}
	// Non-blocking, so the file is read through the runtime's poller: a
	// read waits without a thread, honours deadlines, and Close wakes it.
	file := os.NewFile(uintptr(fd), "inotify")
	conn, err := file.SyscallConn()
	if err != nil {
		file.Close()
		return nil, fmt.Errorf("watch responses: %w", err)
	}
	w := &responseWatcher{
		file:      file,
		conn:      conn,
		opts:      opts,
		exited:    make(chan struct{}),
		dirs:      make(map[string]*responseDir),
		byWD:      make(map[int32]*responseDir),
		idleSince: time.Now(),
		linger:    watcherLinger,
	}
	go w.run()
	return w, nil
}

// await registers a wait for the file at path, arming a watch on its
// directory unless one is there. From its return on, the file's arrival
// is signalled on the waiter's wake channel. An error wrapping
// fs.ErrNotExist means the directory is missing; errWatcherStopped that
// this watcher cannot be used.
func (w *responseWatcher) await(path string) (*responseWaiter, error) {
	dir, name := filepath.Split(path)
	dir = filepath.Clean(dir)
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.stopped.Load() {
		return nil, errWatcherStopped
	}
	d := w.dirs[dir]
	if d == nil {
		d = &responseDir{path: dir, wd: -1, waiters: make(map[string]*responseWaiter)}
		w.dirs[dir] = d
	}
	// Armed again even when watched already: inotify_add_watch hands back
	// the same descriptor for the same directory, which proves the watch
	// is on what is at the path now. Trusting the old watch to report a
	// removal is not enough: the kernel holds IN_DELETE_SELF back while
	// anyone keeps the removed directory open, and an answer written
	// into its replacement would wait for the next rescan.
	if err := w.rewatch(d); err != nil {
		return nil, err
	}
	if d.waiters[name] != nil {
		return nil, fmt.Errorf("watch responses: %s is awaited already", path)
	}
	wt := &responseWaiter{w: w, dir: d, name: name, path: path, wake: make(chan struct{}, 1)}
	d.waiters[name] = wt
	w.waiting++
	return wt, nil
}

// rewatch puts the watch on the directory at d.path now. inotify hands
// back the descriptor it has when that directory is watched already, so
// this also proves that the watch is not on a directory since removed or
// replaced. Called with mu held.
func (w *responseWatcher) rewatch(d *responseDir) error {
	if w.stopped.Load() {
		return errWatcherStopped
	}
	var (
		wd  int
		err error
	)
	if cerr := w.conn.Control(func(fd uintptr) { wd, err = inotifyAddWatch(int(fd), d.path, responseEvents) }); cerr != nil {
		return errWatcherStopped
	}
	if err != nil {
		w.unwatch(d)
		return fmt.Errorf("watch responses: %w", &fs.PathError{Op: "inotify_add_watch", Path: d.path, Err: err})
	}
	if int32(wd) == d.wd {
		return nil
	}
	if other := w.byWD[int32(wd)]; other != nil && other != d {
		// One directory under two paths (a symlinked root): the events
		// could not be told apart. Such a wait gets a watch of its own.
		return fmt.Errorf("watch responses: %s is %s under another name", d.path, other.path)
	}
	if d.wd >= 0 {
		// The watched directory was replaced at its path; the old watch
		// sees nothing we wait for.
		delete(w.byWD, d.wd)
		w.rmWatch(d.wd)
	}
	d.wd = int32(wd)
	w.byWD[d.wd] = d
	return nil
}

// rmWatch removes a watch the kernel still has; failure only means it had
// gone already.
func (w *responseWatcher) rmWatch(wd int32) {
	_ = w.conn.Control(func(fd uintptr) { _, _ = inotifyRmWatch(int(fd), uint32(wd)) })
}

// unwatch forgets d's watch. Called with mu held.
func (w *responseWatcher) unwatch(d *responseDir) {
	if d.wd >= 0 {
		delete(w.byWD, d.wd)
		d.wd = -1
	}
}

// done ends the wait. Safe to call more than once, and after the watcher
// stopped.
func (wt *responseWaiter) done() {
	w := wt.w
	w.mu.Lock()
	defer w.mu.Unlock()
	if wt.dir.waiters[wt.name] != wt {
		return
	}
	delete(wt.dir.waiters, wt.name)
	if w.waiting--; w.waiting == 0 {
		w.idleSince = time.Now()
		// The reader wakes then to see whether anyone came since.
		_ = w.file.SetReadDeadline(w.idleSince.Add(w.linger))
	}
}

// close stops the watcher and waits for its goroutine. Waits still
// registered are told (ended) and fall back to watches of their own.
func (w *responseWatcher) close() {
	w.mu.Lock()
	w.stopped.Store(true)
	w.mu.Unlock()
	w.file.Close() // wakes the reader, which ends the waits on its way out
	<-w.exited
}

func (w *responseWatcher) run() {
	defer close(w.exited)
	// Room for a burst: an event is 16 bytes plus a name padded to 16.
	buf := make([]byte, 64<<10)
	w.setDeadline(false)
	for {
		n, err := w.file.Read(buf)
		switch {
		case err == nil:
			if overflow, lost := w.dispatch(buf[:n]); overflow || lost {
				w.setDeadline(w.rescan())
			}
		case errors.Is(err, os.ErrDeadlineExceeded):
			switch idle, lingered := w.idle(); {
			case lingered:
				w.shut(nil)
				return
			case idle:
				// Asked and done since the deadline was set: linger on
				// from the last ask.
			default:
				w.setDeadline(w.rescan())
			}
		case errors.Is(err, os.ErrClosed):
			w.shut(nil)
			return
		default:
			// A failing instance may fail again at once: the waits fall
			// back, and the next Forward starts a new one.
			w.shut(fmt.Errorf("watch responses: %w; watching each response on its own", err))
			return
		}
	}
}

// setDeadline schedules the next safety rescan: sooner while a directory
// somebody waits in is not watched.
func (w *responseWatcher) setDeadline(lost bool) {
	d := w.opts.RescanInterval
	if d <= 0 {
		d = mailbox.DefaultRescanInterval
	}
	if lost {
		p := w.opts.PollInterval
		if p <= 0 {
			p = mailbox.DefaultPollInterval
		}
		d = min(d, p)
	}
	_ = w.file.SetReadDeadline(time.Now().Add(d))
}

// dispatch hands the events in buf to their waiters. It reports an event
// overflow, and a watched directory that went away while somebody waits
// in it; either calls for a rescan.
func (w *responseWatcher) dispatch(buf []byte) (overflow, lost bool) {
	const header = sizeofInotifyEvent
	w.mu.Lock()
	defer w.mu.Unlock()
	for off := 0; off+header <= len(buf); {
		wd := int32(binary.NativeEndian.Uint32(buf[off:]))
		mask := binary.NativeEndian.Uint32(buf[off+4:])
		nameLen := int(binary.NativeEndian.Uint32(buf[off+12:]))
		name := buf[min(off+header, len(buf)):min(off+header+nameLen, len(buf))]
		off += header + nameLen
		if mask&inQOverflow != 0 {
			overflow = true
			continue
		}
		d := w.byWD[wd]
		if d == nil {
			continue // a watch since replaced
		}
		if mask&(inIgnored|inDeleteSelf|inMoveSelf|inUnmount) != 0 {
			if mask&inMoveSelf != 0 {
				// Renamed away, the directory is still watched, under
				// a path nobody writes to.
				w.rmWatch(wd)
			}
			w.unwatch(d)
			lost = lost || len(d.waiters) > 0
			continue
		}
		for i, c := range name { // the kernel pads the name with NULs
			if c == 0 {
				name = name[:i]
				break
			}
		}
		if wt := d.waiters[string(name)]; wt != nil {
			wt.notify()
		}
	}
	return overflow, lost
}

// rescan re-arms the watch of every directory somebody waits in and wakes
// each waiter whose file is there. It reports whether a directory could
// not be watched.
func (w *responseWatcher) rescan() (lost bool) {
	w.mu.Lock()
	var waiters []*responseWaiter
	for path, d := range w.dirs {
		if len(d.waiters) == 0 {
			if d.wd < 0 {
				delete(w.dirs, path) // gone, and nobody waits there
			}
			continue
		}
		if err := w.rewatch(d); err != nil {
			lost = true
		}
		for _, wt := range d.waiters {
			waiters = append(waiters, wt)
		}
	}
	w.mu.Unlock()
	for _, wt := range waiters {
		if _, err := os.Lstat(wt.path); err == nil {
			wt.notify()
		}
	}
	return lost
}

// idle reports whether nobody waits, and lingered whether nobody has for
// the linger, which stops the watcher. While idle but not lingered yet,
// the deadline is moved to the linger's end.
func (w *responseWatcher) idle() (idle, lingered bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.waiting > 0 {
		return false, false
	}
	if end := w.idleSince.Add(w.linger); time.Now().Before(end) {
		_ = w.file.SetReadDeadline(end)
		return true, false
	}
	w.stopped.Store(true)
	return true, true
}

// shut stops the watcher: no new waits, and every registered one is woken
// with ended set, so that its Forward arms a watch of its own.
func (w *responseWatcher) shut(err error) {
	w.mu.Lock()
	w.stopped.Store(true)
	var waiters []*responseWaiter
	for _, d := range w.dirs {
		for _, wt := range d.waiters {
			waiters = append(waiters, wt)
		}
		clear(d.waiters)
	}
	w.waiting = 0
	w.mu.Unlock()
	for _, wt := range waiters {
		wt.ended.Store(true)
		wt.notify()
	}
	w.file.Close()
	if err != nil && w.opts.OnError != nil {
		w.opts.OnError(err)
	}
}

// responseWait is how one Forward learns that its answer may have
// arrived: through its Client's shared watcher, or through a watch of its
// own (mailbox.WatchFile), which also polls when inotify is unavailable or
// polling was chosen.
type responseWait struct {
	path   string
	opts   mailbox.WatchOptions
	shared *responseWaiter
	own    *mailbox.FileWatch
}

// signal fires when the answer may be there. The shared watcher's signals
// repeat, one per event; a watch of its own fires once and stays fired.
func (r *responseWait) signal() <-chan struct{} {
	if r.shared != nil {
		return r.shared.wake
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
	if r.shared == nil || !r.shared.ended.Load() {
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
		r.shared.done()
	}
	if r.own != nil {
		r.own.Close()
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
	if w := c.watcher; w != nil && !w.stopped.Load() {
		return w
	}
	c.watcher = nil
	now := time.Now()
	if now.Before(c.retryWatcher) {
		return nil
	}
	w, err := newResponseWatcher(c.Watch)
	if err != nil {
		// Most likely the per-user instance limit; try again later,
		// not on every ask.
		c.retryWatcher = now.Add(orDefault(c.Watch.RescanInterval, mailbox.DefaultRescanInterval))
		if c.Watch.OnError != nil {
			c.Watch.OnError(fmt.Errorf("%w; watching each response on its own", err))
		}
		return nil
	}
	c.watcher = w
	return w
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
	c.mu.Unlock()
	if w != nil {
		w.close()
	}
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
		wt, err := w.await(respPath)
		if errors.Is(err, fs.ErrNotExist) {
			// A first ask to this parent, or an inbox removed by
			// someone's cleanup; otherwise the watch proved it exists.
			if err := c.Layout.EnsureInbox(target); err != nil {
				return nil, &inboxError{err}
			}
			wt, err = w.await(respPath)
		}
		if err == nil {
			r.shared = wt
			return r, nil
		}
		if !errors.Is(err, errWatcherStopped) {
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

// rearm makes sure the wait watches the inbox that exists now, after the
// caller recreated it. A failure is left to the watcher's next rescan; a
// watch of its own re-arms by itself.
func (r *responseWait) rearm() {
	if r.shared == nil {
		return
	}
	w := r.shared.w
	w.mu.Lock()
	defer w.mu.Unlock()
	_ = w.rewatch(r.shared.dir)
}

// inboxError is a failure to create the parent's inbox directories.
type inboxError struct{ err error }

func (e *inboxError) Error() string { return e.err.Error() }
func (e *inboxError) Unwrap() error { return e.err }
