package filewatch

import (
	"os"
	"path/filepath"
	"testing"
)

// expectRecheck reads d until a Result asks for a Check, and checks.
func expectRecheck(t *testing.T, d *Dir, what string) {
	t.Helper()
	awaitEvent(t, d, "recheck after "+what, func(ev *Event, r Result) bool { return ev == nil && r.Recheck })
	d.Check()
}

func expectState(t *testing.T, d *Dir, want State) {
	t.Helper()
	if got := d.State(); got != want {
		t.Fatalf("state %v, want %v", got, want)
	}
}

// A pi child's cleanup removes requests/, responses/ and then the session
// directory after every exchange; the next child makes them again and
// writes at once. The Dir learns of each step from a watch on the
// nearest existing ancestor, never from a poll: no Timing is consulted
// here, only events.
func TestDirFollowsItsRecreation(t *testing.T) {
	sessions := filepath.Join(t.TempDir(), "sessions")
	session := filepath.Join(sessions, "s")
	dir := filepath.Join(session, "requests")
	mk := func(p string) {
		t.Helper()
		if err := os.MkdirAll(p, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	rm := func(p string) {
		t.Helper()
		if err := os.Remove(p); err != nil {
			t.Fatal(err)
		}
	}
	mk(dir)
	d := NewDir(dir, Options{OnError: func(err error) { t.Errorf("reported %v", err) }})
	defer d.Close()
	d.Check()
	expectArmed(t, d, 1)

	// pi's order: requests/, then the session directory.
	rm(dir)
	expectLost(t, d)
	d.Check()
	expectState(t, d, Awaiting)
	rm(session)
	expectRecheck(t, d, "the session directory went") // its ancestor went
	expectState(t, d, Awaiting)

	mk(session)
	expectRecheck(t, d, "the session directory came back")
	expectState(t, d, Awaiting)
	mk(dir)
	expectRecheck(t, d, "requests/ came back")
	expectArmed(t, d, 2)
	touch(t, filepath.Join(dir, "r1.json"))
	expectEvent(t, d, "r1.json", Create)

	// Made in one go between two looks: one event, and the arm walks
	// down the whole way.
	rm(filepath.Join(dir, "r1.json"))
	rm(dir)
	expectLost(t, d)
	rm(session)
	d.Check()
	expectState(t, d, Awaiting)
	mk(dir)
	expectRecheck(t, d, "the whole path came back")
	expectArmed(t, d, 3)
}

// The directory made again between the failed watch and the ancestor's:
// the arm finds it at once, and no event is needed.
func TestDirArmsADirectoryMadeWhileLooking(t *testing.T) {
	base := t.TempDir()
	dir := filepath.Join(base, "s", "requests")
	src := newInotifySource(dir)
	d := newDirWith(dir, Options{}, src)
	defer d.Close()
	d.Check()
	expectState(t, d, Awaiting)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	// No event read: the next Check alone arms it.
	d.Check()
	expectArmed(t, d, 1)
	if src.anc.wd >= 0 {
		t.Error("the ancestor watch outlived the arm")
	}
}

// The ancestor removed between the look at it and its watch (a pi child's
// cleanup removes the session directory right after requests/): the watch
// goes to the next existing ancestor up. It gave up instead, and the
// directory was left to the poll cadence (an hour in a test; the broker's
// TestWatcherRecreatedDirectoryDeliversAtOnce failed so about once in a
// hundred runs).
func TestDirAwaitsPastAnAncestorRemovedWhileLooking(t *testing.T) {
	sessions := filepath.Join(t.TempDir(), "sessions")
	session := filepath.Join(sessions, "s")
	dir := filepath.Join(session, "requests")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	src := newInotifySource(dir)
	d := newDirWith(dir, Options{OnError: func(err error) { t.Errorf("reported %v", err) }}, src)
	defer d.Close()
	d.Check()
	expectArmed(t, d, 1)

	if err := os.Remove(dir); err != nil {
		t.Fatal(err)
	}
	expectLost(t, d)
	add := inotifyAddWatch
	t.Cleanup(func() { inotifyAddWatch = add })
	removed := false
	inotifyAddWatch = func(fd int, path string, mask uint32) (int, error) {
		if path == session && !removed {
			removed = true
			if err := os.Remove(session); err != nil {
				t.Error(err)
			}
		}
		return add(fd, path, mask)
	}
	d.Check()
	if !removed {
		t.Fatal("the session directory was never watched")
	}
	expectState(t, d, Awaiting)
	if src.anc.path != sessions {
		t.Errorf("the ancestor watched is %s, want %s", src.anc.path, sessions)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	expectRecheck(t, d, "the whole path came back")
	expectArmed(t, d, 2)
}
