package mailbox

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// A watcher that looks late (WatchOptions.LookLate) has not identified a
// file its event found when the consumer says Done and leaves the file
// there: it cannot tell the file delivered from one made under the name
// since, so it delivers it once more, identified this time, and then
// never again while that file stays. What changes under the name after
// that is new mail, as for any watcher.
func TestWatcherLookLateDeliversAKeptFileOnceMore(t *testing.T) {
	dir := mkdir(t, filepath.Join(fastTempDir(t), "requests"))
	h := startWatcher(t, dir, WatchOptions{RescanInterval: 2 * time.Millisecond, LookLate: true})
	h.waitWatching()
	path := filepath.Join(dir, "r1.json")

	publish(t, dir, "r1.json")
	h.expect("r1.json")
	h.quiet(2)
	h.w.Done("r1.json")
	h.expect("r1.json") // once more: the file was never identified
	h.w.Done("r1.json")
	h.quiet(3) // identified when it came back: not again

	// Rewritten in place, then replaced: new mail each time, once.
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte("{}"), 0); err != nil {
		t.Fatal(err)
	}
	f.Close()
	h.expect("r1.json")
	h.w.Done("r1.json")
	h.quiet(2)
	publish(t, dir, "r1.json")
	h.expect("r1.json")
	h.w.Done("r1.json")
	h.quiet(2)

	// Gone and back under the same name: new mail, found unidentified
	// again, and so delivered once more after a Done while it stays.
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	h.quiet(2)
	publish(t, dir, "r1.json")
	h.expect("r1.json")
	h.w.Done("r1.json")
	h.expect("r1.json")
	h.w.Done("r1.json")
	h.quiet(3)
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
	h.w.Rescan()
	h.expect("a.json", "b.json")
	for _, name := range []string{"a.json", "b.json"} {
		if err := os.Remove(filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
		h.w.Removed(name)
	}
	h.w.Rescan()
	select {
	case <-h.scans:
	case <-time.After(waitLimit):
		t.Fatal("no rescan")
	}
	for _, name := range []string{"a.json", "b.json"} {
		if got := c.of(name); got != 0 {
			t.Errorf("%s looked at %d times, want 0", name, got)
		}
	}
}
