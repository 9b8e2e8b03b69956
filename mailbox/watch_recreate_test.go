package mailbox

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/seed6639df8c/courier/internal/filewatch"
)

// missingState is what a watcher's Dir reports for a missing directory in
// fsnotify mode: inotify watches the nearest existing ancestor, kqueue
// polls.
func missingState() filewatch.State {
	if runtime.GOOS == "linux" {
		return filewatch.Awaiting
	}
	return filewatch.Unarmed
}

// missing asserts that nothing is delivered while the directory is
// missing: in poll mode over two polls; with inotify, once the watcher
// waits on the ancestor's events (it polls for nothing then).
func (h *harness) missing(mode WatchMode) {
	h.t.Helper()
	if mode == WatchPoll || missingState() != filewatch.Awaiting {
		h.quiet(2)
		return
	}
	deadline := time.After(waitLimit)
	for !h.w.notifier.Awaiting() {
		select {
		case name := <-h.w.Ready():
			h.t.Fatalf("delivered %q, want nothing", name)
		case <-h.scans:
		case <-deadline:
			h.t.Fatal("the watcher never watched the missing directory's ancestor")
		}
	}
}

// A pi child's cleanup removes requests/ and then the session directory
// after every exchange (shared/reference/pi-forwarding.md); the next child
// makes them again and writes its request at once. The request is handed
// out on the ancestor's events, not found by a poll: both intervals here
// are an hour, so only events can deliver it (issue 15: pi children made
// the broker poll, 250 ms).
func TestWatcherRecreatedDirectoryDeliversAtOnce(t *testing.T) {
	if missingState() != filewatch.Awaiting {
		t.Skip("without inotify a missing directory is polled for")
	}
	session := filepath.Join(t.TempDir(), "sessions", "parent")
	dir := mkdir(t, filepath.Join(session, "requests"))
	h := startWatcher(t, dir, WatchOptions{RescanInterval: time.Hour, PollInterval: time.Hour})
	h.waitWatching()
	for i, recreate := range []struct {
		what   string
		remove []string
	}{
		{"requests/ removed", []string{dir}},
		{"requests/ and the session directory removed, as pi's cleanup does", []string{dir, session}},
		{"again", []string{dir, session}},
	} {
		for _, p := range recreate.remove {
			if err := os.Remove(p); err != nil {
				t.Fatal(err)
			}
		}
		h.missing(WatchFSNotify)
		mkdir(t, dir)
		name := "r" + string(rune('1'+i)) + ".json"
		publish(t, dir, name)
		h.expect(name)
		h.w.Done(name)
		unpublish(t, dir, name)
	}
}
