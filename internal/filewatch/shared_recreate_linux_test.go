package filewatch

import (
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"
)

// A courier child waits for its answer in responses/ while a pi child of
// the same session runs its cleanup, which removes the empty responses/
// and the session directory; the broker then makes them again and writes
// the answer. The waiter is woken by the ancestor's events: both
// intervals are an hour, so no poll or rescan can wake it.
func TestSharedFollowsARecreatedDirectory(t *testing.T) {
	s, rescans := startEventsOnlyShared(t)
	defer s.Close()
	session := filepath.Join(t.TempDir(), "sessions", "s")
	dir := filepath.Join(session, "responses")
	for round, remove := range [][]string{{dir}, {dir, session}} {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, "r.json")
		wt, err := s.Await(path)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range remove {
			if err := os.Remove(p); err != nil {
				t.Fatal(err)
			}
		}
		// The removal is seen and the ancestor watched before the way
		// back is made; otherwise the test would race the Shared.
		deadline := time.After(waitLimit)
		for !s.awaitingAncestor() {
			select {
			case <-deadline:
				t.Fatalf("round %d: the ancestor of the removed directory was never watched", round)
			case <-rescans:
			}
		}
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		touch(t, path)
		woken(t, wt)
		wt.Done()
		if err := os.Remove(path); err != nil {
			t.Fatal(err)
		}
	}
}

// awaitingAncestor reports whether an ancestor watch is armed, for tests.
func (s *Shared) awaitingAncestor() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, a := range s.ancestors {
		if a.wd >= 0 {
			return true
		}
	}
	return false
}

// The ancestor removed between the look at it and its watch: the Shared
// watches the next existing ancestor up, rather than leave the waiter to
// the poll cadence (an hour here): without it no ancestor is watched.
func TestSharedAwaitsPastAnAncestorRemovedWhileLooking(t *testing.T) {
	session := filepath.Join(t.TempDir(), "sessions", "s")
	dir := filepath.Join(session, "responses")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	// Set before the Shared starts, which reads it on its own goroutine.
	add := inotifyAddWatch
	t.Cleanup(func() { inotifyAddWatch = add })
	var removed atomic.Bool
	inotifyAddWatch = func(fd int, path string, mask uint32) (int, error) {
		if path == session && removed.CompareAndSwap(false, true) {
			if err := os.Remove(session); err != nil {
				t.Error(err)
			}
		}
		return add(fd, path, mask)
	}
	s, rescans := startEventsOnlyShared(t)
	defer s.Close()
	path := filepath.Join(dir, "r.json")
	wt, err := s.Await(path)
	if err != nil {
		t.Fatal(err)
	}
	defer wt.Done()
	if err := os.Remove(dir); err != nil {
		t.Fatal(err)
	}
	deadline := time.After(waitLimit)
	for !s.awaitingAncestor() {
		select {
		case <-deadline:
			t.Fatalf("no ancestor watched (the session directory removed while looking: %v)", removed.Load())
		case <-rescans:
		}
	}
	if !removed.Load() {
		t.Fatal("the session directory was never watched")
	}
	// The way back, made again, wakes the waiter through that watch:
	// TestSharedFollowsARecreatedDirectory.
}

// startEventsOnlyShared starts a Shared whose rescans and polls are an
// hour apart, so that only events can wake a waiter; rescans tells of
// each rescan.
func startEventsOnlyShared(t *testing.T) (*Shared, <-chan struct{}) {
	t.Helper()
	in, err := OpenInotify()
	if err != nil {
		t.Fatal(err)
	}
	rescans := make(chan struct{}, 1)
	s := startShared(in, SharedOptions{Linger: time.Hour, Timing: Timing{Rescan: time.Hour, Poll: time.Hour}}, func() {
		select {
		case rescans <- struct{}{}:
		default:
		}
	})
	return s, rescans
}
