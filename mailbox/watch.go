package mailbox

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/seed6639df8c/courier/internal/filewatch"
)

// WatchMode selects how a watcher learns about new files.
type WatchMode int

const (
	// WatchFSNotify reacts to inotify events (kqueue where there is no
	// inotify), backed by an initial scan, a rescan after every watcher
	// error or overflow, and a periodic safety rescan. Latency is a rename
	// plus a wake-up, tens of microseconds. internal/filewatch does the
	// watching.
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
	DefaultRescanInterval = filewatch.DefaultRescan
	// DefaultPollInterval is pi's own cadence.
	DefaultPollInterval = filewatch.DefaultPoll
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
	// LookLate spares the watcher its look at the file (an lstat) when
	// an event or a scan finds a name it does not know: the name is
	// queued as found and its file left unidentified until the consumer
	// releases it. Done then cannot tell the file delivered from one
	// made under the name since, and delivers a file still there once
	// more (identified this time); Removed and Forget need no identity.
	// For a consumer that removes what it takes and tolerates seeing a
	// file again: a broker under a flood saves a system call for every
	// request on the goroutine every later request waits behind.
	LookLate bool
}

// filewatch is o as internal/filewatch takes it, which does the watching.
func (o WatchOptions) filewatch() filewatch.Options {
	return filewatch.Options{
		Poll:    o.Mode != WatchFSNotify,
		Timing:  filewatch.Timing{Rescan: o.RescanInterval, Poll: o.PollInterval},
		OnError: o.OnError,
	}
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
// Removed is Done for a file the consumer saw gone (it removed it), which
// spares the watcher a look at the directory. Every delivered name must
// get one of these calls, or it is never delivered again.
//
// Delivery is at least once, never concurrent: a file written in place
// (not renamed in) may be delivered again after Done if a write lands
// after its delivery, because the content may have changed under the
// reader, and a watcher that looks late (WatchOptions.LookLate) delivers
// a file it never identified once more after Done. A consumer that leaves
// files in place must tolerate seeing one again; the broker checks
// whether it already answered the request id.
type Watcher struct {
	dir    string
	opts   WatchOptions
	ready  chan string
	kick   chan struct{}
	rescan chan struct{}

	started atomic.Bool
	// queued is len(queue) as of the watcher's last turn (Backlog).
	queued atomic.Int64

	mu       sync.Mutex
	releases []release
	stopped  bool // Run has returned; releases are moot

	// Owned by Run's goroutine.
	state       map[string]*mailEntry
	queue       []string
	lastScanErr string

	// notifier is used only by Run's goroutine, apart from its atomic
	// test counters.
	notifier *filewatch.Dir
	// stat identifies a file (filewatch.Stat); a test counts the looks.
	stat func(path string) (filewatch.ID, bool)

	// Test hooks: hold delays reading inotify events until it is closed
	// (to force an overflow); afterScan runs after every scan.
	hold      <-chan struct{}
	afterScan func()
}

type release struct {
	name string
	how  releaseKind
}

// releaseKind is what a consumer said of a name it releases.
type releaseKind uint8

const (
	releaseDone    releaseKind = iota // Done
	releaseForget                     // Forget
	releaseRemoved                    // Removed
)

type mailState uint8

const (
	mailQueued   mailState = iota + 1 // found, waiting for a consumer
	mailInFlight                      // delivered, no Done or Forget yet
	mailDone                          // Done, and this file is still there
)

type mailEntry struct {
	state mailState
	// id is the file as it was when found (or when Done), so that a
	// file replaced under the same name is recognized as new mail;
	// identified says a look took it. A name a watcher that looks late
	// queued has none, and its file is taken for another than any file
	// found under the name (sameFile).
	id         filewatch.ID
	identified bool
	// changed records evidence, while in flight, that the file the
	// consumer holds is no longer what is there: it vanished, or a
	// Write, Remove or Rename event named it. Inode numbers are reused
	// at once and ctime is jiffy-grained, so a delete-and-recreate can
	// leave id unchanged; the event still tells.
	changed bool
	// replaced says that, while in flight, an event found a file under
	// the name that may not be the one delivered (written in place, or
	// another identity): Removed then looks at the directory as Done
	// does, instead of taking the consumer's word that nothing is there.
	replaced bool
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
		stat:   filewatch.Stat,
	}
	fw := opts.filewatch()
	fw.OnError = w.report
	w.notifier = filewatch.NewDir(w.dir, fw)
	return w
}

// Dir is the watched directory; a delivered name is relative to it.
func (w *Watcher) Dir() string { return w.dir }

// Ready delivers base names of files that are ready to be read. It is
// closed when Run returns. Any number of goroutines may receive from it.
// It holds no names: a name is handed out when a consumer takes it, so
// that one whose file vanishes before then is dropped, never delivered.
func (w *Watcher) Ready() <-chan string { return w.ready }

// Backlog is how many names wait for the consumer, as of the watcher's
// last turn: found and not yet handed out. Safe from any goroutine. A
// consumer that does other work besides reading (a broker answering a
// flood) can leave it while names wait: the names behind a flood's come
// no sooner than the watcher's turns, which compete with that work for
// the processors.
func (w *Watcher) Backlog() int { return int(w.queued.Load()) }

// Done releases a delivered name for good (see Watcher). Safe to call from
// any goroutine, also after Run has returned.
func (w *Watcher) Done(name string) { w.release(name, releaseDone) }

// Forget releases a delivered name for redelivery (see Watcher). Safe to
// call from any goroutine, also after Run has returned.
func (w *Watcher) Forget(name string) { w.release(name, releaseForget) }

// Removed is Done for a name whose file the consumer saw gone (it removed
// it, or found it removed) before releasing it: the watcher forgets the
// name without looking at the directory, which Done does to learn whether
// a file was written under the name meanwhile. A file made under the name
// later has an event of its own, which finds the name unknown and
// delivers it; if an event while the name was in flight found a file
// there that may not be the one delivered, Removed looks as Done does.
// Nothing is delivered twice or lost: what a look would tell, the events
// tell, and a lost event is the safety rescan's, as always. A consumer
// answering a flood of requests saves a system call each on the
// watcher's goroutine, which every later request waits behind.
func (w *Watcher) Removed(name string) { w.release(name, releaseRemoved) }

func (w *Watcher) release(name string, how releaseKind) {
	w.mu.Lock()
	if !w.stopped {
		w.releases = append(w.releases, release{name: name, how: how})
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
func (w *Watcher) List() ([]string, error) { return filewatch.List(w.dir, nil) }

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
		w.queued.Store(0) // nothing waits for a consumer any more (Backlog)
		close(w.ready)
	}()

	n := w.notifier
	defer n.Close()
	n.Check()
	w.scan()

	timing := w.opts.filewatch().Timing
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	// resetTimer arms the next scan; an interval of 0 means none (the
	// owner calls Rescan).
	resetTimer := func() {
		if d := timing.Next(n.State()); d > 0 {
			timer.Reset(d)
		} else {
			timer.Stop()
		}
	}
	resetTimer()
	hold := w.hold
	handleEvent := w.handleEvent // made once, not for every read
	for {
		w.applyReleases()
		var (
			out  chan<- string
			next string
		)
		if name, ok := w.head(); ok {
			out, next = w.ready, name
		}
		w.queued.Store(int64(len(w.queue)))
		batches := n.Batches()
		if hold != nil {
			batches = nil
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
		case b := <-batches:
			r := n.Handle(b, handleEvent)
			// Events may have been lost; the directory is the truth.
			switch {
			case r.Err != nil:
				// The watch was released: a failing inotify instance
				// could fail again at once. It is replaced at the poll
				// cadence.
				w.report(fmt.Errorf("watch %s: %w; rescanning", w.dir, r.Err))
			case r.Overflow:
				w.report(fmt.Errorf("watch %s: %w; rescanning", w.dir, filewatch.ErrOverflow))
			}
			if r.Lost || r.Recheck {
				// The directory went away, or the way to it was made
				// again: watch it, or the ancestor that will tell when
				// it is back, before the scan that closes the race.
				n.Check()
			}
			if r.Lost || r.Recheck || r.Err != nil {
				resetTimer()
			}
			if r.Lost || r.Recheck || r.Overflow || r.Err != nil {
				w.scan()
			}
		case <-timer.C:
			n.Check()
			w.scan()
			resetTimer()
		case <-w.rescan:
			n.Check()
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
//
// The name is kept as a copy of its own: an event's name is the tail of
// its whole path, and the name stays as long as the request waits (held
// at a prompt, by the thousand), where the path would stay with it.
func (w *Watcher) enqueue(name string, id filewatch.ID) {
	w.queueEntry(name, &mailEntry{state: mailQueued, id: id, identified: true})
}

// enqueueUnidentified queues name, found by a watcher that looks late,
// without a look at its file.
func (w *Watcher) enqueueUnidentified(name string) {
	w.queueEntry(name, &mailEntry{state: mailQueued})
}

func (w *Watcher) queueEntry(name string, e *mailEntry) {
	name = strings.Clone(name)
	w.state[name] = e
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
		switch {
		case r.how == releaseForget:
			delete(w.state, r.name)
			// Redelivered by the next event or scan that finds it,
			// not at once, so a failing file does not spin.
			continue
		case r.how == releaseRemoved && e.state == mailInFlight && !e.replaced:
			// Gone when released, and no event since the delivery
			// found another file there: a file made later is new mail
			// to its own event.
			delete(w.state, r.name)
			continue
		}
		id, ok := w.stat(filepath.Join(w.dir, r.name))
		switch {
		case !ok:
			delete(w.state, r.name)
		case e.state == mailInFlight && (e.changed || !e.sameFile(id)):
			// Replaced or rewritten while the consumer had it:
			// what is there now is new mail.
			w.enqueue(r.name, id)
		default:
			*e = mailEntry{state: mailDone, id: id, identified: true}
		}
	}
}

// handleEvent treats one event of the watched directory as a hint.
func (w *Watcher) handleEvent(ev filewatch.Event) {
	if !IsMailName(ev.Name) {
		return
	}
	if ev.Op&(filewatch.Create|filewatch.Write) == 0 {
		// Removed or renamed away: gone, whatever a look would find
		// now. A file made under the name since has an event of its
		// own, after this one, which looks. Not looking here saves a
		// system call for every request a consumer removes.
		w.observe(ev.Name, filewatch.ID{}, false, true)
		return
	}
	if w.opts.LookLate && w.state[ev.Name] == nil {
		// New mail: what a look would tell matters only once the name is
		// delivered, and an unknown identity is taken as another file's.
		w.enqueueUnidentified(ev.Name)
		return
	}
	// Create is a rename into the directory or a new file; alone it
	// proves nothing about a name already delivered, because the Create
	// of the very file a scan delivered may arrive after it. Write (a
	// writer publishing in place) does prove a change.
	id, exists := w.stat(ev.Path)
	changed := !exists || ev.Op&(filewatch.Write|filewatch.Remove|filewatch.Rename) != 0
	w.observe(ev.Name, id, exists, changed)
}

// sameFile says whether id is the file e was found as. A file never
// identified is taken for another: the one answer that loses nothing.
func (e *mailEntry) sameFile(id filewatch.ID) bool { return e.identified && id == e.id }

// observe reconciles what is known of name with what is on disk: a file
// with identity id exists or not, and changed says whether there is
// evidence of a change beyond the identity.
func (w *Watcher) observe(name string, id filewatch.ID, exists, changed bool) {
	e := w.state[name]
	switch {
	case e == nil:
		if exists {
			w.enqueue(name, id)
		}
	case e.state == mailQueued:
		if exists {
			e.id, e.identified = id, true
		} else {
			delete(w.state, name)
		}
	case e.state == mailInFlight:
		// The consumer keeps it; Done decides what the change means.
		if exists && e.changed {
			// A file there after evidence that the delivered one went
			// or changed may be another whatever its identity says (an
			// inode number reused within one ctime tick): Removed looks.
			e.replaced = true
		}
		if changed || !e.sameFile(id) {
			e.changed = true
			e.replaced = e.replaced || exists
		}
	case !exists:
		delete(w.state, name) // done, and gone
	case changed || !e.sameFile(id):
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
	names, err := filewatch.List(w.dir, IsMailName)
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
		present[name] = struct{}{}
		// A queued name needs nothing, and an in-flight one is judged at
		// Done, which compares the file's identity then: with thousands of
		// asks held at a terminal, a stat of each every second was most
		// of an idle broker's CPU.
		e := w.state[name]
		switch {
		case e == nil && w.opts.LookLate:
			w.enqueueUnidentified(name)
		case e == nil || e.state == mailDone:
			id, ok := w.stat(filepath.Join(w.dir, name))
			w.observe(name, id, ok, false)
		case e.state == mailInFlight:
			// Listed while in flight: the delivered file, or one made
			// after the consumer removed it whose events were lost (what
			// a scan is for). Removed looks, as Done does.
			e.replaced = true
		}
	}
	for name := range w.state {
		if _, ok := present[name]; !ok {
			w.observe(name, filewatch.ID{}, false, true)
		}
	}
}
