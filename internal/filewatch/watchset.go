package filewatch

import "fmt"

// watchSet is the directories watched on one inotify instance, by
// descriptor. A Dir keeps one directory in it and a Shared many; what a
// removed or replaced directory means is decided here, once.
type watchSet struct {
	in   *Inotify
	mask uint32
	byWD map[int32]*watched
}

// watched is one directory of a watchSet.
type watched struct {
	path string
	wd   int32 // -1 while no watch is on the directory at path
	// mask is what this directory's watch asks for, when not the set's.
	mask uint32
	// below, on an ancestor watched for missing directories (a Shared's),
	// names the paths one component below it on the way to them: their
	// creation calls for a rescan.
	below map[string]bool
	// waiters are the waits for files in this directory, by name; only a
	// Shared has any.
	waiters map[string]*Waiter
}

func newWatchSet(in *Inotify, mask uint32) watchSet {
	return watchSet{in: in, mask: mask, byWD: make(map[int32]*watched)}
}

// rewatch puts the watch on the directory at d.path now. inotify hands
// back the descriptor it has when that directory is watched already, so
// the same descriptor proves that the watch is not on a directory since
// removed or replaced (the kernel holds back the removal event of a
// directory someone keeps open, so an old watch cannot be trusted to say
// so). A new descriptor means another directory is at the path now:
// moved reports it (a first watch included), and the old watch, which
// sees nothing there, is removed. On failure d is unwatched; the error
// wraps the errno, fs.ErrNotExist when nothing is at the path.
func (s *watchSet) rewatch(d *watched) (moved bool, err error) {
	mask := s.mask
	if d.mask != 0 {
		mask = d.mask
	}
	wd, err := s.in.addWatch(d.path, mask)
	if err != nil {
		s.unwatch(d)
		return false, err
	}
	if wd == d.wd {
		return false, nil
	}
	if other := s.byWD[wd]; other != nil && other != d {
		// One directory under two paths (a symlinked root): the events
		// could not be told apart.
		return false, fmt.Errorf("watch %s: the directory is %s under another name", d.path, other.path)
	}
	if d.wd >= 0 {
		delete(s.byWD, d.wd)
		s.in.rmWatch(d.wd)
	}
	d.wd = wd
	s.byWD[wd] = d
	return true, nil
}

// unwatch forgets d's watch.
func (s *watchSet) unwatch(d *watched) {
	if d.wd >= 0 {
		delete(s.byWD, d.wd)
		d.wd = -1
	}
}

// change is what one record means to a watchSet.
type change struct {
	overflow bool     // the queue overflowed: events were lost
	dir      *watched // the directory, for a lost one or a name
	lost     bool     // the directory's watch ended, and it is unwatched
	name     []byte   // else: the file the event names, valid until the next read
	mask     uint32
}

// next reads the next record of r that means something: an overflow (read
// every directory again), a directory whose watch ended (removed, renamed
// away, unmounted, or dropped; it is unwatched here), or an event naming
// a file. Records of a watch since replaced are passed over. False at the
// end of r.
func (s *watchSet) next(r *records) (change, bool) {
	for {
		wd, mask, name, ok := r.next()
		switch {
		case !ok:
			return change{}, false
		case mask&inQOverflow != 0:
			return change{overflow: true}, true
		}
		d := s.byWD[wd]
		switch {
		case d == nil:
			continue
		case mask&goneEvents != 0:
			if mask&inMoveSelf != 0 {
				// Renamed away, the directory is still watched, under a
				// path nobody writes to.
				s.in.rmWatch(wd)
			}
			s.unwatch(d)
			return change{dir: d, lost: true}, true
		}
		return change{dir: d, name: name, mask: mask}, true
	}
}
