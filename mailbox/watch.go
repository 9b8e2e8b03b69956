package mailbox

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fsnotify/fsnotify"
	"golang.org/x/sys/unix"
)

// WatchMode selects how a watcher learns about new files.
type WatchMode int

const (
	// WatchFSNotify reacts to inotify events, backed by an initial scan, a
	// rescan after every watcher error or overflow, and a periodic safety
	// rescan. Latency is a rename plus a wake-up, tens of microseconds.
	WatchFSNotify WatchMode = iota
	// WatchPoll lists the directory every PollInterval and never touches
	// inotify: for NFS and bind mounts where events from other machines
	// or the host never arrive. Latency is about half the interval.
	WatchPoll
)

// ParseWatchMode reads the --watch flag: "fsnotify" or "poll".
func ParseWatchMode(s string) (WatchMode, error) {
	switch s {
	case "fsnotify":
		return WatchFSNotify, nil
	case "poll":
		return WatchPoll, nil
	}
	return 0, fmt.Errorf("unknown watch mode %q, expected fsnotify or poll", s)
}

// String is the flag value that selects the mode.
func (m WatchMode) String() string {
	switch m {
	case WatchFSNotify:
		return "fsnotify"
	case WatchPoll:
		return "poll"
	}
	return fmt.Sprintf("WatchMode(%d)", int(m))
}

// MarshalText makes a WatchMode usable with flag.TextVar.
func (m WatchMode) MarshalText() ([]byte, error) { return []byte(m.String()), nil }

// UnmarshalText makes a WatchMode usable with flag.TextVar.
func (m *WatchMode) UnmarshalText(text []byte) error {
	mode, err := ParseWatchMode(string(text))
	if err != nil {
		return err
	}
	*m = mode
	return nil
}

// Default intervals of WatchOptions.
const (
	// DefaultRescanInterval bounds how long a file whose event was lost
	// (overflow, a dropped watch) waits; an idle rescan costs microseconds.
	DefaultRescanInterval = time.Second
	// DefaultPollInterval is pi's own cadence.
	DefaultPollInterval = 250 * time.Millisecond
)

// WatchOptions configure a Watcher or a FileWatch. The zero value is
// fsnotify with the default intervals.
type WatchOptions struct {
	// Mode is WatchFSNotify (default) or WatchPoll.
	Mode WatchMode
	// RescanInterval is the safety rescan while inotify is armed;
	// default DefaultRescanInterval. A negative value leaves the safety
	// rescan to the owner, who calls Watcher.Rescan from a timer it has
	// anyway: a broker's one-second tick then wakes the process once,
	// where two timers drift apart and wake it twice. (The poll cadence
	// while inotify cannot be armed stays the watcher's own.)
	RescanInterval time.Duration
	// PollInterval is the scan cadence in WatchPoll mode, and also while
	// inotify cannot be armed (the directory does not exist yet, or the
	// per-user inotify instance limit is reached), so that the watcher
	// notices the directory appearing; default DefaultPollInterval.
	PollInterval time.Duration
	// OnError, if set, hears of trouble the watcher recovered from: an
	// event overflow, a watcher error, a directory that could not be
	// listed or watched. It runs on the watcher's goroutine and must not
	// block. A missing directory is normal and not reported.
	OnError func(error)
}

func (o WatchOptions) rescanInterval() time.Duration {
	if o.RescanInterval > 0 {
		return o.RescanInterval
	}
	return DefaultRescanInterval
}

func (o WatchOptions) pollInterval() time.Duration {
	if o.PollInterval > 0 {
		return o.PollInterval
	}
	return DefaultPollInterval
}

// Watcher hands out the names of mail files ("*.json", not dotfiles; see
// IsMailName) in one directory as they become ready: requests/ for a
// broker. Events are hints, never the record: what the directory holds is
// re-read on every hint, on start, after an overflow or error, and every
// RescanInterval, so a lost event delays a file by at most that long.
//
// # Delivery
//
// Each name is delivered on Ready once and is then the consumer's until it
// calls Done or Forget; a name is never handed to two consumers at once,
// however many events or scans see it. Done means "finished": the name is
// not delivered again while the same file stays in the directory, but a
// file that is replaced or modified under that name, or that disappears
// and comes back, is delivered again. Forget means "try again": the name
// is delivered again on the next event or scan that finds it, which makes
// the rescan interval the natural back-off for a request that failed.
// Every delivered name must get one of the two calls, or it is never
// delivered again.
//
// Delivery is at least once, never concurrent: a file written in place
// (not renamed in) may be delivered again after Done if a write lands
// after its delivery, because the content may have changed under the
// reader. A consumer that leaves files in place must tolerate seeing one
// again; the broker checks whether it already answered the request id.
type Watcher struct {
	dir    string
	opts   WatchOptions
	ready  chan string
	kick   chan struct{}
	rescan chan struct{}

	started atomic.Bool

	mu       sync.Mutex
	releases []release
	stopped  bool // Run has returned; releases are moot

	// Owned by Run's goroutine.
	state       map[string]*mailEntry
	queue       []string
	lastScanErr string

	// notifier is used only by Run's goroutine, apart from its atomic
	// test counters.
	notifier *dirNotifier

	// Test hooks: hold delays reading inotify events until it is closed
	// (to force an overflow); afterScan runs after every scan.
	hold      <-chan struct{}
	afterScan func()
}

type release struct {
	name   string
	forget bool
}

type mailState uint8

const (
	mailQueued   mailState = iota + 1 // found, waiting for a consumer
	mailInFlight                      // delivered, no Done or Forget yet
	mailDone                          // Done, and this file is still there
)

type mailEntry struct {
	state mailState
	// id is the file as it was when found (or when Done), so that a
	// file replaced under the same name is recognized as new mail.
	id fileID
	// changed records evidence, while in flight, that the file the
	// consumer holds is no longer what is there: it vanished, or a
	// Write, Remove or Rename event named it. Inode numbers are reused
	// at once and ctime is jiffy-grained, so a delete-and-recreate can
	// leave id unchanged; the event still tells.
	changed bool
}

// NewWatcher prepares a watcher for dir. Nothing happens until Run; dir
// need not exist yet.
func NewWatcher(dir string, opts WatchOptions) *Watcher {
	w := &Watcher{
		dir:    filepath.Clean(dir),
		opts:   opts,
		ready:  make(chan string),
		kick:   make(chan struct{}, 1),
		rescan: make(chan struct{}, 1),
		state:  make(map[string]*mailEntry),
	}
	w.notifier = &dirNotifier{dir: w.dir, enabled: opts.Mode == WatchFSNotify, report: w.report}
	return w
}

// Dir is the watched directory; a delivered name is relative to it.
func (w *Watcher) Dir() string { return w.dir }

// Ready delivers base names of files that are ready to be read. It is
// closed when Run returns. Any number of goroutines may receive from it.
func (w *Watcher) Ready() <-chan string { return w.ready }

// Done releases a delivered name for good (see Watcher). Safe to call from
// any goroutine, also after Run has returned.
func (w *Watcher) Done(name string) { w.release(name, false) }

// Forget releases a delivered name for redelivery (see Watcher). Safe to
// call from any goroutine, also after Run has returned.
func (w *Watcher) Forget(name string) { w.release(name, true) }

func (w *Watcher) release(name string, forget bool) {
	w.mu.Lock()
	if !w.stopped {
		w.releases = append(w.releases, release{name: name, forget: forget})
	}
	w.mu.Unlock()
	select {
	case w.kick <- struct{}{}:
	default:
	}
}

// List returns the names in the watched directory now, in no order, as
// the watcher's own scan reads them: for an owner that must judge what is
// still there (a broker's sweep of the requests it holds).
func (w *Watcher) List() ([]string, error) { return readDirNames(w.dir) }

// Rescan asks Run for a safety rescan (see WatchOptions.RescanInterval)
// and returns at once; requests made while one is pending coalesce. Safe
// to call from any goroutine, also after Run has returned.
func (w *Watcher) Rescan() {
	select {
	case w.rescan <- struct{}{}:
	default:
	}
}

// Run watches until ctx is done, then closes Ready and returns nil, having
// stopped every goroutine it started. It returns an error only if called
// twice. The watch is armed before the first scan, so a file created at
// any moment after Run starts is found.
func (w *Watcher) Run(ctx context.Context) error {
	if !w.started.CompareAndSwap(false, true) {
		return errors.New("mailbox watcher: Run called twice")
	}
	defer func() {
		w.mu.Lock()
		w.stopped, w.releases = true, nil
		w.mu.Unlock()
		close(w.ready)
	}()

	n := w.notifier
	defer n.disarm()
	n.arm()
	w.scan()

	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	// resetTimer arms the next scan; an interval of 0 means none (the
	// owner calls Rescan).
	resetTimer := func() {
		if d := n.interval(w.opts); d > 0 {
			timer.Reset(d)
		} else {
			timer.Stop()
		}
	}
	resetTimer()
	hold := w.hold
	for {
		w.applyReleases()
		var (
			out  chan<- string
			next string
		)
		if name, ok := w.head(); ok {
			out, next = w.ready, name
		}
		events, errs := n.eventC(), n.errorC()
		if hold != nil {
			events, errs = nil, nil
		}
		select {
		case <-ctx.Done():
			return nil
		case out <- next:
			w.queue = w.queue[1:]
			w.state[next].state = mailInFlight
		case <-w.kick:
		case <-hold:
			hold = nil
		case ev, ok := <-events:
			if !ok {
				n.disarm()
				resetTimer()
				continue
			}
			if w.handleEvent(n, ev) {
				// The directory itself went away: look for its
				// replacement at the poll cadence.
				w.scan()
				resetTimer()
			}
		case err, ok := <-errs:
			if !ok {
				n.disarm()
				resetTimer()
				continue
			}
			// Events may have been lost; the directory is the truth.
			w.report(fmt.Errorf("watch %s: %w; rescanning", w.dir, err))
			if !errors.Is(err, fsnotify.ErrEventOverflow) {
				// A failing inotify instance could fail again at
				// once; replace it at the poll cadence instead.
				n.disarm()
				resetTimer()
			}
			w.scan()
		case <-timer.C:
			n.check()
			w.scan()
			resetTimer()
		case <-w.rescan:
			n.check()
			w.scan()
			resetTimer()
		}
	}
}

func (w *Watcher) report(err error) {
	if w.opts.OnError != nil {
		w.opts.OnError(err)
	}
}

// head returns the next name to offer, skipping queue slots whose name was
// dropped (its file vanished) or re-queued later.
func (w *Watcher) head() (string, bool) {
	for len(w.queue) > 0 {
		name := w.queue[0]
		if e := w.state[name]; e != nil && e.state == mailQueued {
			return name, true
		}
		w.queue = w.queue[1:]
	}
	w.queue = nil // let the backing array of a drained burst go
	return "", false
}

// enqueue queues name, whose file had identity id when it was found. The
// identity is taken then, not at delivery: the consumer may have read and
// even replaced the file before this goroutine runs again, and an identity
// older than what the consumer read can only cause a redelivery, never a
// lost file.
func (w *Watcher) enqueue(name string, id fileID) {
	w.state[name] = &mailEntry{state: mailQueued, id: id}
	w.queue = append(w.queue, name)
}

func (w *Watcher) applyReleases() {
	w.mu.Lock()
	rs := w.releases
	w.releases = nil
	w.mu.Unlock()
	for _, r := range rs {
		e := w.state[r.name]
		if e == nil || e.state == mailQueued {
			continue // never delivered: nothing to release
		}
		if r.forget {
			delete(w.state, r.name)
			// Redelivered by the next event or scan that finds it,
			// not at once, so a failing file does not spin.
			continue
		}
		id, ok := statFileID(filepath.Join(w.dir, r.name))
		switch {
		case !ok:
			delete(w.state, r.name)
		case e.state == mailInFlight && (e.changed || id != e.id):
			// Replaced or rewritten while the consumer had it:
			// what is there now is new mail.
			w.enqueue(r.name, id)
		default:
			*e = mailEntry{state: mailDone, id: id}
		}
	}
}

// handleEvent treats one inotify event as a hint. It reports whether the
// watched directory itself was removed or renamed.
func (w *Watcher) handleEvent(n *dirNotifier, ev fsnotify.Event) bool {
	if filepath.Clean(ev.Name) == w.dir {
		if ev.Has(fsnotify.Remove) || ev.Has(fsnotify.Rename) {
			n.disarm()
			return true
		}
		return false
	}
	if filepath.Dir(ev.Name) != w.dir || ev.Op == fsnotify.Chmod {
		return false
	}
	name := filepath.Base(ev.Name)
	if !IsMailName(name) {
		return false
	}
	// Create is a rename into the directory or a new file; alone it
	// proves nothing about a name already delivered, because the Create
	// of the very file a scan delivered may arrive after it. Write (a
	// writer publishing in place), Remove and Rename do prove a change.
	id, exists := statFileID(ev.Name)
	changed := !exists || ev.Has(fsnotify.Write) || ev.Has(fsnotify.Remove) || ev.Has(fsnotify.Rename)
	w.observe(name, id, exists, changed)
	return false
}

// observe reconciles what is known of name with what is on disk: a file
// with identity id exists or not, and changed says whether there is
// evidence of a change beyond the identity.
func (w *Watcher) observe(name string, id fileID, exists, changed bool) {
	e := w.state[name]
	switch {
	case e == nil:
		if exists {
			w.enqueue(name, id)
		}
	case e.state == mailQueued:
		if exists {
			e.id = id
		} else {
			delete(w.state, name)
		}
	case e.state == mailInFlight:
		// The consumer keeps it; Done decides what the change means.
		if changed || id != e.id {
			e.changed = true
		}
	case !exists:
		delete(w.state, name) // done, and gone
	case changed || id != e.id:
		w.enqueue(name, id) // done, and replaced or rewritten since
	}
}

// scan lists the directory and reconciles: new names are queued, done
// names whose file changed are queued again, and queued or done names that
// are gone are dropped (so the same name coming back is new mail).
// Delivered names stay with their consumer whatever the listing says.
func (w *Watcher) scan() {
	defer func() {
		if w.afterScan != nil {
			w.afterScan()
		}
	}()
	names, err := readDirNames(w.dir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		// Reported once until it changes or clears, not every tick.
		if msg := err.Error(); msg != w.lastScanErr {
			w.lastScanErr = msg
			w.report(fmt.Errorf("scan %s: %w", w.dir, err))
		}
		return // the state stays as it was: absence is not proven
	}
	w.lastScanErr = ""
	// Sorted, pi 20.x ids (<ms>-<rand>-<pid>) come out in creation order.
	slices.Sort(names)
	present := make(map[string]struct{}, len(names))
	for _, name := range names {
		if !IsMailName(name) {
			continue
		}
		present[name] = struct{}{}
		// A queued name needs nothing, and an in-flight one is judged at
		// Done, which compares the file's identity then: with thousands of
		// asks held at a terminal, a stat of each every second was most
		// of an idle broker's CPU.
		if e := w.state[name]; e == nil || e.state == mailDone {
			id, ok := statFileID(filepath.Join(w.dir, name))
			w.observe(name, id, ok, false)
		}
	}
	for name := range w.state {
		if _, ok := present[name]; !ok {
			w.observe(name, fileID{}, false, true)
		}
	}
}

func readDirNames(dir string) ([]string, error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return f.Readdirnames(-1)
}

// fileID tells one file from a later one under the same name. ctime is
// part of it because inode numbers are reused at once on tmpfs and ext4,
// and because a write in place also changes it.
type fileID struct {
	dev, ino    uint64
	csec, cnsec int64
}

// statFileID lstats path. It reports false only when nothing is there; a
// path that exists but cannot be examined reports true with a zero id, so
// it is treated as present and possibly new.
func statFileID(path string) (fileID, bool) {
	var st unix.Stat_t
	err := ignoringEINTR(func() error { return unix.Lstat(path, &st) })
	switch {
	case errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR):
		return fileID{}, false
	case err != nil:
		return fileID{}, true
	}
	return fileID{dev: uint64(st.Dev), ino: st.Ino, csec: st.Ctim.Sec, cnsec: st.Ctim.Nsec}, true
}

// dirNotifier owns the inotify side of watching one directory: it arms a
// watch when the directory exists, notices when the directory is removed
// or replaced, and re-arms with a fresh inotify instance, so no stale
// bookkeeping of the old directory can swallow events of the new one.
type dirNotifier struct {
	dir     string
	enabled bool // false in WatchPoll mode
	report  func(error)

	fsw     *fsnotify.Watcher
	dirID   fileID // the directory the watch is on
	lastErr string // the last arming error reported, to report each once

	// For tests, which read them from another goroutine: whether a
	// watch is armed, and how many times one was.
	watching atomic.Bool
	arms     atomic.Int64
}

func (n *dirNotifier) armed() bool { return n.fsw != nil }

// arm (re)creates the watch. Failure leaves it unarmed; the caller's next
// tick tries again.
func (n *dirNotifier) arm() {
	if !n.enabled {
		return
	}
	n.disarm()
	// Identify the directory before adding the watch: if it is replaced
	// in between, the identity is the old one and the next check re-arms.
	id, ok := statDirID(n.dir)
	if !ok {
		return // not there yet; polled for at PollInterval
	}
	fsw, err := fsnotify.NewWatcher()
	if err != nil {
		n.reportOnce(fmt.Errorf("watch %s: %w; polling instead", n.dir, err))
		return
	}
	if err := fsw.Add(n.dir); err != nil {
		fsw.Close()
		if !errors.Is(err, fs.ErrNotExist) {
			n.reportOnce(fmt.Errorf("watch %s: %w; polling instead", n.dir, err))
		}
		return
	}
	n.fsw, n.dirID, n.lastErr = fsw, id, ""
	n.arms.Add(1)
	n.watching.Store(true)
}

func (n *dirNotifier) reportOnce(err error) {
	if msg := err.Error(); msg != n.lastErr {
		n.lastErr = msg
		n.report(err)
	}
}

// check re-arms when the watch is missing or on a directory that is no
// longer the one at the path.
func (n *dirNotifier) check() {
	if !n.enabled {
		return
	}
	id, ok := statDirID(n.dir)
	switch {
	case !ok:
		n.disarm()
	case !n.armed() || id != n.dirID:
		n.arm()
	}
}

// disarm closes the inotify instance; fsnotify's Close waits for its
// reader goroutine, so nothing outlives the watcher.
func (n *dirNotifier) disarm() {
	if n.fsw != nil {
		n.fsw.Close()
		n.fsw = nil
		n.watching.Store(false)
	}
}

func (n *dirNotifier) eventC() <-chan fsnotify.Event {
	if n.fsw == nil {
		return nil
	}
	return n.fsw.Events
}

func (n *dirNotifier) errorC() <-chan error {
	if n.fsw == nil {
		return nil
	}
	return n.fsw.Errors
}

// interval is the wait until the next scan: the safety rescan while
// events flow, the poll cadence otherwise.
func (n *dirNotifier) interval(o WatchOptions) time.Duration {
	switch {
	case !n.enabled:
		return o.pollInterval()
	case n.armed():
		if o.RescanInterval < 0 {
			return 0
		}
		return o.rescanInterval()
	case o.RescanInterval < 0:
		return o.pollInterval()
	}
	return min(o.pollInterval(), o.rescanInterval())
}

func statDirID(dir string) (fileID, bool) {
	var st unix.Stat_t
	if err := ignoringEINTR(func() error { return unix.Stat(dir, &st) }); err != nil || st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return fileID{}, false
	}
	return fileID{dev: uint64(st.Dev), ino: st.Ino}, true
}
