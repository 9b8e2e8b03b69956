package mailbox

import (
	"path/filepath"
	"testing"
	"time"
)

// An unidentified file is another than any file found under its name,
// also than one that cannot be examined (whose identity is as unknown):
// a file renamed over the one in flight, its Create the only event, is
// delivered after the release, with no safety rescan to find it.
func TestWatcherLookLateTellsAnUnexaminableReplacement(t *testing.T) {
	dir := mkdir(t, filepath.Join(fastTempDir(t), "requests"))
	h := startWatcher(t, dir, WatchOptions{RescanInterval: time.Hour, LookLate: true}, oneIdentity)
	h.waitWatching()
	publish(t, dir, "r1.json")
	h.expect("r1.json")
	publish(t, dir, "r1.json") // renamed over it: a Create, no Remove
	publish(t, dir, "sync.json")
	h.expect("sync.json") // r1's Create is handled, r1 in flight
	h.w.Done("r1.json")
	h.expectAgain("r1.json")
}

// Names a scan finds (events lost) are queued unidentified too: a file a
// consumer takes and removes costs a late watcher no look at all.
func TestWatcherLookLateScanDoesNotLook(t *testing.T) {
	dir := mkdir(t, filepath.Join(fastTempDir(t), "requests"))
	var c statCounter
	hold := make(chan struct{}) // events are never read: only scans tell
	h := startWatcher(t, dir, WatchOptions{RescanInterval: -1, LookLate: true}, countStats(&c), func(w *Watcher) { w.hold = hold })
	h.waitWatching()
	publish(t, dir, "a.json")
	publish(t, dir, "b.json")
	h.rescanned()
	h.expect("a.json", "b.json")
	for _, name := range []string{"a.json", "b.json"} {
		unpublish(t, dir, name)
		h.w.Removed(name)
	}
	h.quietAfterRescans(2) // the releases are applied before the second
	for _, name := range []string{"a.json", "b.json"} {
		if got := c.of(name); got != 0 {
			t.Errorf("%s looked at %d times, want 0", name, got)
		}
	}
}
