package filewatch

import (
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// newShared starts a Shared on a fresh instance until the test ends.
func newShared(t *testing.T) *Shared {
	t.Helper()
	in, err := OpenInotify()
	if err != nil {
		t.Fatal(err)
	}
	s := NewShared(in, SharedOptions{Linger: time.Hour})
	t.Cleanup(s.Close)
	return s
}

// woken waits for wt's signal, with a deadline.
func woken(t *testing.T, wt *Waiter) {
	t.Helper()
	select {
	case <-wt.C():
	case <-time.After(waitLimit):
		t.Fatalf("%s: no signal", wt.path)
	}
}

// A file renamed in or created wakes its waiter and no other; the
// waiter's own deletion wakes nobody.
func TestSharedWakesTheWaiterOfTheFile(t *testing.T) {
	s := newShared(t)
	dir := t.TempDir()
	a, err := s.Await(filepath.Join(dir, "a.json"))
	if err != nil {
		t.Fatal(err)
	}
	defer a.Done()
	b, err := s.Await(filepath.Join(dir, "b.json"))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Done()
	tmp := filepath.Join(dir, ".a.json.tmp")
	if err := os.WriteFile(tmp, []byte("{}"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, "a.json")); err != nil {
		t.Fatal(err)
	}
	woken(t, a)
	if err := os.Remove(filepath.Join(dir, "a.json")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "b.json"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	woken(t, b)
	select {
	case <-a.C():
		t.Error("a deletion woke a waiter")
	default:
	}
}

// Close ends every registered wait: woken, with Ended set; no new wait
// is taken, and the goroutine has returned.
func TestSharedCloseEndsTheWaits(t *testing.T) {
	s := newShared(t)
	a, err := s.Await(filepath.Join(t.TempDir(), "a.json"))
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	woken(t, a)
	if !a.Ended() {
		t.Error("a wait not ended by Close")
	}
	a.Done() // harmless after the end
	if _, err := s.Await(filepath.Join(t.TempDir(), "b.json")); !errors.Is(err, ErrStopped) {
		t.Errorf("Await after Close: %v, want ErrStopped", err)
	}
	select {
	case <-s.Exited():
	default:
		t.Error("the goroutine outlived Close")
	}
}

// Nobody waiting for the linger stops a Shared by itself.
func TestSharedStopsAfterItsLinger(t *testing.T) {
	in, err := OpenInotify()
	if err != nil {
		t.Fatal(err)
	}
	s := NewShared(in, SharedOptions{Linger: 10 * time.Millisecond})
	defer s.Close()
	a, err := s.Await(filepath.Join(t.TempDir(), "a.json"))
	if err != nil {
		t.Fatal(err)
	}
	a.Done()
	select {
	case <-s.Exited():
	case <-time.After(waitLimit):
		t.Fatal("an idle Shared did not stop")
	}
	if !s.Stopped() {
		t.Error("stopped, but Stopped says no")
	}
}

// After an event overflow, whose events are lost, the rescan wakes every
// waiter whose file is there.
func TestSharedRescansAfterAnOverflow(t *testing.T) {
	w := newShared(t)
	dir := t.TempDir()
	there, missing := filepath.Join(dir, "perm-1.json"), filepath.Join(dir, "perm-2.json")
	// Written before the watch is armed: no event will ever name it.
	if err := os.WriteFile(there, []byte("{}"), 0o600); err != nil {
		t.Fatal(err)
	}
	a, err := w.Await(there)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Done()
	b, err := w.Await(missing)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Done()
	var ev [unix.SizeofInotifyEvent]byte
	binary.NativeEndian.PutUint32(ev[0:], ^uint32(0)) // wd -1: the queue's
	binary.NativeEndian.PutUint32(ev[4:], unix.IN_Q_OVERFLOW)
	if overflow, _ := w.dispatch(ev[:]); !overflow {
		t.Fatal("an overflow event not reported")
	}
	w.rescan()
	select {
	case <-a.wake:
	default:
		t.Error("the rescan did not wake the waiter whose file is there")
	}
	select {
	case <-b.wake:
		t.Error("the rescan woke a waiter whose file is not there")
	default:
	}
}

// One waiter per path: a second wait for the same file is refused (and
// its owner waits on its own), never a lost wake-up.
func TestSharedOneWaiterPerFile(t *testing.T) {
	w := newShared(t)
	path := filepath.Join(t.TempDir(), "perm-1.json")
	a, err := w.Await(path)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Done()
	if _, err := w.Await(path); err == nil || !strings.Contains(err.Error(), "awaited already") {
		t.Fatalf("second await: %v", err)
	}
	if _, err := w.Await(filepath.Join(t.TempDir(), "missing", "perm-1.json")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("await in a missing directory: %v, want not-exist", err)
	}
}

// The event buffer: names padded with NULs, an overflow between events,
// IN_IGNORED for a watch already replaced, and events of a wd the Shared
// does not know.
func TestSharedDispatchParsesRecords(t *testing.T) {
	w := newShared(t)
	dir := t.TempDir()
	long := strings.Repeat("x", 31) + ".json" // 36 bytes: padded to 48
	a, err := w.Await(filepath.Join(dir, "perm-1.json"))
	if err != nil {
		t.Fatal(err)
	}
	defer a.Done()
	b, err := w.Await(filepath.Join(dir, long))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Done()
	w.mu.Lock()
	wd := w.dirs[filepath.Clean(dir)].wd
	w.mu.Unlock()
	var buf []byte
	add := func(wd int32, mask uint32, name string) {
		nl := 0
		if name != "" {
			nl = (len(name) + 1 + 15) &^ 15
		}
		ev := make([]byte, unix.SizeofInotifyEvent+nl)
		binary.NativeEndian.PutUint32(ev[0:], uint32(wd))
		binary.NativeEndian.PutUint32(ev[4:], mask)
		binary.NativeEndian.PutUint32(ev[12:], uint32(nl))
		copy(ev[unix.SizeofInotifyEvent:], name)
		buf = append(buf, ev...)
	}
	add(wd+1000, unix.IN_IGNORED, "")              // unknown wd
	add(wd, unix.IN_CREATE, "perm-1.json.tmp")     // another name
	add(-1, unix.IN_Q_OVERFLOW, "")                // overflow in the middle
	add(wd, unix.IN_MOVED_TO, "perm-1.json")       // padded
	add(wd, unix.IN_CREATE, long)                  // padded to 48
	add(wd, unix.IN_CREATE|unix.IN_ISDIR, "perm-") // a prefix only
	overflow, lost := w.dispatch(buf)
	if !overflow || lost {
		t.Errorf("overflow, lost = %v, %v", overflow, lost)
	}
	for _, wt := range []*Waiter{a, b} {
		select {
		case <-wt.wake:
		default:
			t.Errorf("%s not woken", wt.name)
		}
	}
}

// wd numbers are not reused after rm_watch (the kernel allocates them
// cyclically), so an old watch's late IN_IGNORED cannot unwatch a new one.
func TestWDNotReusedAfterRmWatch(t *testing.T) {
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	dir := t.TempDir()
	seen := map[int]bool{}
	for range 50 {
		wd, err := unix.InotifyAddWatch(fd, dir, arrivalEvents)
		if err != nil {
			t.Fatal(err)
		}
		if seen[wd] {
			t.Fatalf("wd %d reused", wd)
		}
		seen[wd] = true
		if _, err := unix.InotifyRmWatch(fd, uint32(wd)); err != nil {
			t.Fatal(err)
		}
	}
	_ = os.Remove(dir)
}

// IN_IGNORED for the live watch of a directory somebody waits in: the
// watch is forgotten, a rescan is asked for, and the rescan re-arms it on
// a new wd and wakes the waiter whose file is there.
func TestSharedIgnoredLiveWatchRearms(t *testing.T) {
	w := newShared(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "perm-1.json")
	a, err := w.Await(path)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Done()
	w.mu.Lock()
	d := w.dirs[filepath.Clean(dir)]
	old := d.wd
	w.mu.Unlock()
	// As the kernel reports a dropped watch. (Not removed for real: the
	// reader would see that IN_IGNORED first.)
	var ev [unix.SizeofInotifyEvent]byte
	binary.NativeEndian.PutUint32(ev[0:], uint32(old))
	binary.NativeEndian.PutUint32(ev[4:], unix.IN_IGNORED)
	if _, lost := w.dispatch(ev[:]); !lost {
		t.Fatal("IN_IGNORED of a watch somebody waits on not reported lost")
	}
	if err := os.WriteFile(path, []byte("{}"), 0o600); err != nil {
		t.Fatal(err)
	}
	if lost := w.rescan(); lost {
		t.Fatal("rescan could not re-arm")
	}
	w.mu.Lock()
	nw := d.wd
	w.mu.Unlock()
	if nw < 0 {
		t.Errorf("wd after rescan = %d (old %d)", nw, old)
	}
	select {
	case <-a.wake:
	default:
		t.Error("the rescan did not wake the waiter")
	}
}
