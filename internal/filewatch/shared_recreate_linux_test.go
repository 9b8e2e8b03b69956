package filewatch

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// A courier child waits for its answer in responses/ while a pi child of
// the same session runs its cleanup, which removes the empty responses/
// and the session directory; the broker then makes them again and writes
// the answer. The waiter is woken by the ancestor's events: both
// intervals are an hour, so no poll or rescan can wake it.
func TestSharedFollowsARecreatedDirectory(t *testing.T) {
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
