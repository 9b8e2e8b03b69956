package filewatch

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
)

// inotifySource is a Dir's watch on inotify: one instance, kept while the
// Dir lives (also while its directory is missing), and a goroutine that
// reads it and hands each read to the Dir's owner. The owner's goroutine
// makes sense of the records, so the watch's bookkeeping has one owner.
type inotifySource struct {
	open func() (*Inotify, error) // OpenInotify; tests make it fail
	set  watchSet                 // set.in is nil while there is no instance
	dir  watched
	// anc is the nearest existing ancestor while the directory is
	// missing (anc.wd >= 0 then), watched for the creation of next, the
	// path's component below it.
	anc  watched
	next string
	// prefix is what a name in the directory is joined to for its path.
	prefix string
	out    chan Batch
	quit   chan struct{} // closed to stop the reader
	done   chan struct{} // closed when the reader has returned
}

func newInotifySource(path string) *inotifySource {
	prefix := path
	if !strings.HasSuffix(prefix, string(filepath.Separator)) {
		prefix += string(filepath.Separator)
	}
	return &inotifySource{open: OpenInotify, dir: watched{path: path, wd: -1}, anc: watched{wd: -1, mask: ancestorEvents}, prefix: prefix}
}

// ancestorEvents is what the watch on a missing directory's ancestor asks
// for: a directory made or renamed into it, and its own end.
const ancestorEvents = inCreate | inMovedTo | inDeleteSelf | inMoveSelf | inOnlyDir

// maxDescents bounds one arm's walk down a path being made while it looks:
// each round finds one more component there.
const maxDescents = 64

func (s *inotifySource) arm() (bool, error) {
	if s.set.in == nil {
		in, err := s.open()
		if err != nil {
			return false, err
		}
		s.start(in)
	}
	var err error
	for range maxDescents {
		var moved bool
		moved, err = s.set.rewatch(&s.dir)
		if err == nil {
			s.dropAncestor()
			return moved, nil
		}
		if !notThere(err) {
			s.dropAncestor()
			return false, err
		}
		if !s.watchAncestor() {
			break
		}
	}
	return false, err
}

// watchAncestor puts the ancestor watch on the nearest existing ancestor
// of the missing directory. It reports whether the component below that
// ancestor exists by now (made between the failed watch and this one),
// when the caller must try the directory again: the watch was armed too
// late to tell of it.
func (s *inotifySource) watchAncestor() (again bool) {
	next := s.dir.path
	for {
		parent := filepath.Dir(next)
		if parent == next {
			s.dropAncestor()
			return false
		}
		if _, ok := StatDir(parent); ok {
			if s.anc.path != parent && s.anc.wd >= 0 {
				s.dropAncestor()
			}
			s.anc.path, s.next = parent, next
			if _, err := s.set.rewatch(&s.anc); err != nil {
				if notThere(err) {
					// Removed between the look and the watch (a pi
					// child's cleanup removes the session directory
					// right after requests/): the nearest existing
					// ancestor is further up. Giving up here left the
					// directory to the poll cadence.
					next = parent
					continue
				}
				// A watch cannot be had: look again at the poll cadence.
				return false
			}
			_, err := os.Lstat(next)
			return err == nil
		}
		next = parent
	}
}

// dropAncestor removes the ancestor watch, if any.
func (s *inotifySource) dropAncestor() {
	if s.anc.wd < 0 {
		return
	}
	wd := s.anc.wd
	s.set.unwatch(&s.anc)
	s.set.in.rmWatch(wd)
}

func (s *inotifySource) awaiting() bool {
	return s.set.in != nil && s.dir.wd < 0 && s.anc.wd >= 0
}

func (s *inotifySource) start(in *Inotify) {
	s.set = newWatchSet(in, changeEvents)
	s.out, s.quit, s.done = make(chan Batch), make(chan struct{}), make(chan struct{})
	go readBatches(in, s.out, s.quit, s.done)
}

// readBatches reads in until it is closed or fails, and sends each read
// on out; a failure is sent too, and ends it. It reads into two buffers in
// turn: out is unbuffered, so by the time a read is sent the owner has
// received the one before it and, handling each before it receives the
// next (see Batch), is done with the buffer that one was read into.
func readBatches(in *Inotify, out chan<- Batch, quit <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	var bufs [2][]byte
	for i := 0; ; i ^= 1 {
		if bufs[i] == nil {
			bufs[i] = make([]byte, readBufferSize)
		}
		n, err := in.read(bufs[i])
		var b Batch
		switch {
		case err == nil:
			b.data = bufs[i][:n]
		case closed(err):
			return
		default:
			b.err = err
		}
		select {
		case out <- b:
		case <-quit:
			return
		}
		if err != nil {
			return
		}
	}
}

func (s *inotifySource) armed() bool { return s.set.in != nil && s.dir.wd >= 0 }

func (s *inotifySource) batches() <-chan Batch { return s.out }

func (s *inotifySource) handle(b Batch, fn func(Event)) Result {
	if s.set.in == nil {
		return Result{} // read before the instance was released
	}
	if b.err != nil {
		// A failing instance could fail again at once: the Dir polls
		// until the next Check makes a new one.
		s.close()
		return Result{Err: b.err}
	}
	var res Result
	for r := (records{b.data}); ; {
		c, ok := s.set.next(&r)
		switch {
		case !ok:
			return res
		case c.overflow:
			res.Overflow = true
		case c.dir == &s.anc:
			// The way to the directory: made again, or the ancestor is
			// gone and a nearer one must be found.
			if c.lost || filepath.Join(s.anc.path, string(c.name)) == s.next {
				res.Recheck = true
			}
		case c.lost:
			res.Lost = true
		default:
			if op := opOf(c.mask); op != 0 {
				path := s.prefix + string(c.name)
				fn(Event{Name: path[len(path)-len(c.name):], Path: path, Op: op})
			}
		}
	}
}

func (s *inotifySource) close() {
	if s.set.in == nil {
		return
	}
	close(s.quit)
	s.set.in.Close()
	<-s.done
	s.set, s.out = watchSet{}, nil
	s.dir.wd, s.anc.wd = -1, -1
}

// closed reports whether err says the instance was closed.
func closed(err error) bool { return errors.Is(err, os.ErrClosed) }
