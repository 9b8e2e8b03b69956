package filewatch

import (
	"errors"
	"io/fs"
	"path/filepath"

	"github.com/fsnotify/fsnotify"
)

// fsnotifySource is a Dir's watch where there is no inotify: fsnotify,
// which uses kqueue on the BSDs and macOS. Each directory gets a fresh
// fsnotify watcher, so that no bookkeeping of a removed directory can
// swallow the events of the one that replaced it; the directory's
// identity (StatDir) tells that it was replaced.
type fsnotifySource struct {
	path  string
	fsw   *fsnotify.Watcher
	dirID ID // the directory the watch is on
	out   chan Batch
	quit  chan struct{} // closed to stop the forwarder
	done  chan struct{} // closed when the forwarder has returned
}

func newFSNotifySource(path string) *fsnotifySource { return &fsnotifySource{path: path} }

// awaiting is false: without inotify a missing directory is polled for.
func (s *fsnotifySource) awaiting() bool { return false }

func (s *fsnotifySource) arm() (bool, error) {
	id, ok := StatDir(s.path)
	switch {
	case !ok:
		s.close()
		return false, &fs.PathError{Op: "stat", Path: s.path, Err: fs.ErrNotExist}
	case s.fsw != nil && id == s.dirID:
		return false, nil
	}
	s.close()
	fsw, err := fsnotify.NewWatcher()
	if err != nil {
		return false, err
	}
	if err := fsw.Add(s.path); err != nil {
		fsw.Close()
		return false, err
	}
	s.fsw, s.dirID = fsw, id
	s.out, s.quit, s.done = make(chan Batch), make(chan struct{}), make(chan struct{})
	go forwardEvents(fsw, s.out, s.quit, s.done)
	return true, nil
}

// forwardEvents hands fsnotify's events and errors on as Batches until
// the watcher is closed.
func forwardEvents(fsw *fsnotify.Watcher, out chan<- Batch, quit <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	for {
		var b Batch
		select {
		case ev, ok := <-fsw.Events:
			if !ok {
				return
			}
			b.ev = ev
		case err, ok := <-fsw.Errors:
			if !ok {
				return
			}
			b.err = err
		}
		select {
		case out <- b:
		case <-quit:
			return
		}
	}
}

func (s *fsnotifySource) armed() bool { return s.fsw != nil }

func (s *fsnotifySource) batches() <-chan Batch { return s.out }

func (s *fsnotifySource) handle(b Batch, fn func(Event)) Result {
	switch {
	case s.fsw == nil:
		return Result{} // read before the watcher was released
	case errors.Is(b.err, fsnotify.ErrEventOverflow):
		return Result{Overflow: true}
	case b.err != nil:
		// A failing watcher could fail again at once: the Dir polls until
		// the next Check makes a new one.
		s.close()
		return Result{Err: b.err}
	}
	ev := b.ev
	if filepath.Clean(ev.Name) == s.path {
		if ev.Has(fsnotify.Remove) || ev.Has(fsnotify.Rename) {
			s.close()
			return Result{Lost: true}
		}
		return Result{}
	}
	if filepath.Dir(ev.Name) != s.path {
		return Result{}
	}
	var op Op
	if ev.Has(fsnotify.Create) {
		op |= Create
	}
	if ev.Has(fsnotify.Write) {
		op |= Write
	}
	if ev.Has(fsnotify.Remove) {
		op |= Remove
	}
	if ev.Has(fsnotify.Rename) {
		op |= Rename
	}
	if op != 0 { // a change of mode alone tells nothing
		fn(Event{Name: filepath.Base(ev.Name), Path: ev.Name, Op: op})
	}
	return Result{}
}

// close releases the watcher; fsnotify's Close waits for its reader, and
// closing its channels ends the forwarder.
func (s *fsnotifySource) close() {
	if s.fsw == nil {
		return
	}
	close(s.quit)
	s.fsw.Close()
	<-s.done
	s.fsw, s.out = nil, nil
}
