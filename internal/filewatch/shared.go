package filewatch

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"
)

// SharedOptions configure a Shared.
type SharedOptions struct {
	// Timing is the safety rescan while anyone waits, and the poll for a
	// directory somebody waits in that is not watched (removed). A
	// negative Rescan means the default: nobody drives a Shared's rescan
	// but itself.
	Timing Timing
	// Linger is how long a Shared with nobody waiting stays for the next
	// wait before it stops by itself and releases its instance.
	Linger time.Duration
	// OnError, if set, hears of the failure that stopped the Shared: the
	// error of a read of its instance. It runs on the Shared's goroutine.
	OnError func(error)
}

// Shared waits for many files, in any number of directories, on one
// inotify instance and one goroutine, which hands each arriving file name
// to the one Waiter waiting for it: N waiters in one directory cost one
// wake-up per arrival, not N. It asks for arrivals only (arrivalEvents),
// so a waiter deleting its own file wakes nobody.
// docs/decisions/0009-shared-response-watcher.md says why forward.Client
// waits for its answers this way.
//
// Events are hints, never the record: while anyone waits, every waiter's
// path is checked every Timing.Rescan (Timing.Poll while a directory
// somebody waits in is not watched, having been removed) and at once
// after an event overflow, so a lost event delays a file, never loses it.
//
// A Shared stops when Close is called, when nobody has waited for the
// Linger, or when its instance fails. Waits still registered then are
// woken with Ended set, and their owners wait on their own (File).
type Shared struct {
	in     *Inotify
	timing Timing
	report func(error)
	exited chan struct{}

	stopped atomic.Bool // no new waits; set under mu

	mu   sync.Mutex
	set  watchSet
	dirs map[string]*watched // by path
	// ancestors are the nearest existing ancestors of directories
	// somebody waits in that are missing (a pi child's cleanup removed a
	// responses/), watched for the way back being made; by path.
	ancestors map[string]*watched
	waiting   int
	idleSince time.Time
	linger    time.Duration
	rescanned func() // nil outside tests
}

// Waiter is one registration for one file of a Shared.
type Waiter struct {
	s    *Shared
	dir  *watched
	name string
	path string
	// wake is signalled when an event names the file, when a rescan finds
	// it, and when the Shared ends (ended is then set).
	wake  chan struct{}
	ended atomic.Bool
}

// NewShared starts a Shared on in, which it owns from then on, and its
// reader goroutine.
func NewShared(in *Inotify, opts SharedOptions) *Shared { return startShared(in, opts, nil) }

// startShared is NewShared with a hook that hears of each rescan's end, for
// tests that must know the Shared has seen a change.
func startShared(in *Inotify, opts SharedOptions, rescanned func()) *Shared {
	s := &Shared{
		rescanned: rescanned,
		in:        in,
		timing:    opts.Timing.withOwnRescan(),
		report:    opts.OnError,
		exited:    make(chan struct{}),
		set:       newWatchSet(in, arrivalEvents),
		dirs:      make(map[string]*watched),
		ancestors: make(map[string]*watched),
		idleSince: time.Now(),
		linger:    opts.Linger,
	}
	go s.run()
	return s
}

// Await registers a wait for the file at path, arming a watch on its
// directory unless one is there. From its return on, the file's arrival is
// signalled on the Waiter's C. An error wrapping fs.ErrNotExist means the
// directory is missing; ErrStopped that this Shared cannot be used.
func (s *Shared) Await(path string) (*Waiter, error) {
	dir, name := filepath.Split(path)
	dir = filepath.Clean(dir)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped.Load() {
		return nil, ErrStopped
	}
	d := s.dirs[dir]
	if d == nil {
		d = &watched{path: dir, wd: -1, waiters: make(map[string]*Waiter)}
		s.dirs[dir] = d
	}
	// Armed again even when watched already: that proves the watch is on
	// what is at the path now (rewatch), where trusting the old watch to
	// report a removal would leave a file written into a replacement
	// directory to the next rescan.
	if err := s.rewatch(d); err != nil {
		return nil, err
	}
	if d.waiters[name] != nil {
		return nil, fmt.Errorf("await %s: the file is awaited already", path)
	}
	wt := &Waiter{s: s, dir: d, name: name, path: path, wake: make(chan struct{}, 1)}
	d.waiters[name] = wt
	s.waiting++
	return wt, nil
}

// rewatch is watchSet.rewatch, refused once the Shared stopped. Called
// with mu held.
func (s *Shared) rewatch(d *watched) error {
	if s.stopped.Load() {
		return ErrStopped
	}
	_, err := s.set.rewatch(d)
	if closed(err) {
		return ErrStopped
	}
	return err
}

// Stopped reports whether the Shared takes no more waits.
func (s *Shared) Stopped() bool { return s.stopped.Load() }

// Exited is closed once the Shared's goroutine has returned.
func (s *Shared) Exited() <-chan struct{} { return s.exited }

// Dirs reports how many directories the Shared knows: watched, or waited
// in since their watch ended.
func (s *Shared) Dirs() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.dirs)
}

// Close stops the Shared and waits for its goroutine. Waits still
// registered are woken with Ended set. It is idempotent.
func (s *Shared) Close() {
	s.mu.Lock()
	s.stopped.Store(true)
	s.mu.Unlock()
	s.in.Close() // wakes the reader, which ends the waits on its way out
	<-s.exited
}

// C is signalled when the file may have arrived, and when the Shared
// ended (Ended). A signal is a hint: look for the file.
func (wt *Waiter) C() <-chan struct{} { return wt.wake }

// Ended reports whether the Shared stopped: no more signals will come.
func (wt *Waiter) Ended() bool { return wt.ended.Load() }

func (wt *Waiter) notify() {
	select {
	case wt.wake <- struct{}{}:
	default: // a signal is pending already
	}
}

// Rearm makes sure the wait watches the directory that is at its path
// now, after the caller made it again. A failure is left to the next
// rescan.
func (wt *Waiter) Rearm() {
	s := wt.s
	s.mu.Lock()
	defer s.mu.Unlock()
	_ = s.rewatch(wt.dir)
}

// Done ends the wait. Safe to call more than once, and after the Shared
// stopped.
func (wt *Waiter) Done() {
	s := wt.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if wt.dir.waiters[wt.name] != wt {
		return
	}
	delete(wt.dir.waiters, wt.name)
	if s.waiting--; s.waiting == 0 {
		s.idleSince = time.Now()
		// The reader wakes then to see whether anyone came since.
		s.in.setReadDeadline(s.idleSince.Add(s.linger))
	}
}

func (s *Shared) run() {
	defer close(s.exited)
	buf := make([]byte, readBufferSize)
	s.setDeadline(false)
	for {
		n, err := s.in.read(buf)
		switch {
		case err == nil:
			if overflow, lost := s.dispatch(buf[:n]); overflow || lost {
				s.setDeadline(s.rescan())
			}
		case errors.Is(err, os.ErrDeadlineExceeded):
			switch idle, lingered := s.idle(); {
			case lingered:
				s.shut(nil)
				return
			case idle:
				// Asked and done since the deadline was set: linger on
				// from the last wait.
			default:
				s.setDeadline(s.rescan())
			}
		case closed(err):
			s.shut(nil)
			return
		default:
			// A failing instance may fail again at once: the waits fall
			// back, and the owner may start a new Shared.
			s.shut(err)
			return
		}
	}
}

// setDeadline schedules the next safety rescan: sooner while a directory
// somebody waits in is not watched.
func (s *Shared) setDeadline(lost bool) {
	state := Armed
	if lost {
		state = Unarmed
	}
	s.in.setReadDeadline(time.Now().Add(s.timing.Next(state)))
}

// dispatch hands the events in buf to their waiters. It reports an event
// overflow, and a watched directory that went away while somebody waits
// in it; either calls for a rescan.
func (s *Shared) dispatch(buf []byte) (overflow, lost bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for r := (records{buf}); ; {
		c, ok := s.set.next(&r)
		switch {
		case !ok:
			return overflow, lost
		case c.overflow:
			overflow = true
		case c.dir.below != nil:
			// The way to a missing directory was made again, or its
			// ancestor went: look again now.
			if c.lost {
				delete(s.ancestors, c.dir.path)
				lost = true
			} else if c.dir.below[filepath.Join(c.dir.path, string(c.name))] {
				lost = true
			}
		case c.lost:
			lost = lost || len(c.dir.waiters) > 0
		default:
			if wt := c.dir.waiters[string(c.name)]; wt != nil {
				wt.notify()
			}
		}
	}
}

// rescan re-arms the watch of every directory somebody waits in and wakes
// each waiter whose file is there; a missing one is awaited through a
// watch on its nearest existing ancestor. It reports whether a directory
// could be watched neither way, which is then polled for.
func (s *Shared) rescan() (lost bool) {
	s.mu.Lock()
	var waiters []*Waiter
	needed := make(map[string]bool)
	for path, d := range s.dirs {
		if len(d.waiters) == 0 {
			if d.wd < 0 {
				delete(s.dirs, path) // gone, and nobody waits there
			}
			continue
		}
		if !s.watchOrAwait(d, needed) {
			lost = true
		}
		for _, wt := range d.waiters {
			waiters = append(waiters, wt)
		}
	}
	for path, a := range s.ancestors {
		if !needed[path] {
			s.dropAncestor(a)
		}
	}
	s.mu.Unlock()
	for _, wt := range waiters {
		if _, err := os.Lstat(wt.path); err == nil {
			wt.notify()
		}
	}
	if s.rescanned != nil {
		s.rescanned()
	}
	return lost
}

// watchOrAwait re-arms the watch of d, or watches the nearest existing
// ancestor of d for the way back. When the way was made again between the
// failed watch and the ancestor's (a broker making the session directory
// and responses/ again at once), it looks again, a bounded number of
// times: reporting d lost instead left its waiters to the poll cadence
// (TestSharedFollowsARecreatedDirectory failed so, about twice in a
// hundred runs). It reports false when d could be watched neither way.
// Called with mu held.
func (s *Shared) watchOrAwait(d *watched, needed map[string]bool) bool {
	for range maxDescents {
		if err := s.rewatch(d); err == nil {
			return true
		}
		awaiting, again := s.awaitDir(d.path, needed)
		if !again {
			return awaiting
		}
	}
	return false
}

// awaitDir watches the nearest existing ancestor of the missing directory
// dir for the creation of the component below it, and marks it needed. It
// reports whether it awaits it; again when that component exists by now
// (made after the failed watch: the directory must be looked at again
// rather than awaited). Called with mu held.
func (s *Shared) awaitDir(dir string, needed map[string]bool) (awaiting, again bool) {
	next := dir
	for {
		parent := filepath.Dir(next)
		if parent == next {
			return false, false
		}
		if _, ok := StatDir(parent); !ok {
			next = parent
			continue
		}
		a := s.ancestors[parent]
		if a == nil {
			a = &watched{path: parent, wd: -1, mask: ancestorEvents, below: make(map[string]bool)}
		}
		if err := s.rewatch(a); err != nil {
			if a.wd < 0 {
				delete(s.ancestors, parent)
			}
			if notThere(err) {
				// Removed between the look and the watch: the nearest
				// existing ancestor is further up.
				next = parent
				continue
			}
			return false, false
		}
		if !needed[parent] {
			clear(a.below) // rebuilt on each rescan
		}
		s.ancestors[parent], needed[parent] = a, true
		a.below[next] = true
		_, err := os.Lstat(next)
		return err != nil, err == nil
	}
}

// dropAncestor removes an ancestor watch nobody needs any more. Called
// with mu held.
func (s *Shared) dropAncestor(a *watched) {
	delete(s.ancestors, a.path)
	if a.wd >= 0 {
		wd := a.wd
		s.set.unwatch(a)
		s.in.rmWatch(wd)
	}
}

// idle reports whether nobody waits, and lingered whether nobody has for
// the linger, which stops the Shared. While idle but not lingered yet,
// the deadline is moved to the linger's end.
func (s *Shared) idle() (idle, lingered bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.waiting > 0 {
		return false, false
	}
	if end := s.idleSince.Add(s.linger); time.Now().Before(end) {
		s.in.setReadDeadline(end)
		return true, false
	}
	s.stopped.Store(true)
	return true, true
}

// shut stops the Shared: no new waits, and every registered one is woken
// with Ended set, so that its owner waits on its own.
func (s *Shared) shut(err error) {
	s.mu.Lock()
	s.stopped.Store(true)
	var waiters []*Waiter
	for _, d := range s.dirs {
		for _, wt := range d.waiters {
			waiters = append(waiters, wt)
		}
		clear(d.waiters)
	}
	s.waiting = 0
	s.mu.Unlock()
	for _, wt := range waiters {
		wt.ended.Store(true)
		wt.notify()
	}
	s.in.Close()
	if err != nil && s.report != nil {
		s.report(err)
	}
}
