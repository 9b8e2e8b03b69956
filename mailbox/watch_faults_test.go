package mailbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fsnotify/fsnotify"
)

// The watch's faults: more events than the kernel queues, a stalled
// consumer, and the watched directory removed, renamed or replaced under
// a running Watcher. The delivery rules are pinned in watch_test.go.

// inotifyQueueLimit is fs.inotify.max_queued_events.
func inotifyQueueLimit(t *testing.T) int {
	b, err := os.ReadFile("/proc/sys/fs/inotify/max_queued_events")
	if err != nil {
		return 16384
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// burst renames n files into dir.
func burst(t *testing.T, dir string, n int) map[string]bool {
	t.Helper()
	stage := mkdir(t, filepath.Join(filepath.Dir(dir), "stage"))
	names := make(map[string]bool, n)
	for i := range n {
		name := fmt.Sprintf("r-%05d.json", i)
		if err := os.WriteFile(filepath.Join(stage, name), nil, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(filepath.Join(stage, name), filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
		names[name] = true
	}
	return names
}

// receiveAll takes every name in want from the watcher, failing on a
// duplicate; a sentinel file published afterwards proves that no
// duplicate was still queued behind them.
func receiveAll(t *testing.T, h *harness, dir string, want map[string]bool) {
	t.Helper()
	seen := make(map[string]bool, len(want))
	for len(seen) < len(want) {
		name := h.next()
		switch {
		case !want[name]:
			t.Fatalf("delivered unexpected %q", name)
		case seen[name]:
			t.Fatalf("delivered %q twice", name)
		}
		seen[name] = true
	}
	publish(t, dir, "zz-sentinel.json")
	if got := h.next(); got != "zz-sentinel.json" {
		t.Fatalf("delivered %q again after all %d", got, len(want))
	}
}

// TestWatcherRecoversFromOverflow stalls both the consumer and the
// watcher's inotify reading (a slow plugin call) while more files arrive
// than the kernel queues, so events are lost for real; the rescan after
// the overflow must find every file, each exactly once. The safety rescan
// is set to an hour so that only the overflow can be what saves them.
func TestWatcherRecoversFromOverflow(t *testing.T) {
	n := max(20000, inotifyQueueLimit(t)+8192)
	dir := mkdir(t, filepath.Join(fastTempDir(t), "requests"))
	hold := make(chan struct{})
	h := startWatcher(t, dir, WatchOptions{RescanInterval: time.Hour}, func(w *Watcher) { w.hold = hold })
	h.waitWatching()
	want := burst(t, dir, n)
	close(hold)
	deadline := time.After(waitLimit)
	for overflowed := false; !overflowed; {
		select {
		case err := <-h.errs:
			overflowed = errors.Is(err, fsnotify.ErrEventOverflow)
		case <-deadline:
			t.Fatal("no overflow reported")
		}
	}
	receiveAll(t, h, dir, want)
}

// TestWatcherStalledConsumer is the common case of the same burst: only
// the consumer stalls, the watcher keeps draining events into its queue.
func TestWatcherStalledConsumer(t *testing.T) {
	dir := mkdir(t, filepath.Join(fastTempDir(t), "requests"))
	h := startWatcher(t, dir, WatchOptions{RescanInterval: 50 * time.Millisecond})
	h.waitWatching()
	want := burst(t, dir, 20000)
	receiveAll(t, h, dir, want)
}

func TestWatcherDirectoryLifecycle(t *testing.T) {
	for _, mode := range []WatchMode{WatchFSNotify, WatchPoll} {
		t.Run(mode.String(), func(t *testing.T) {
			base := t.TempDir()
			dir := filepath.Join(base, "requests")
			// RescanInterval an hour: once armed, only inotify events
			// deliver; PollInterval is the cadence of looking for the
			// directory while it is missing.
			h := startWatcher(t, dir, WatchOptions{Mode: mode, RescanInterval: time.Hour, PollInterval: 2 * time.Millisecond})
			// rearm runs change and, in fsnotify mode, waits until the
			// watch is armed again afterwards.
			rearm := func(change func()) {
				t.Helper()
				before := h.w.notifier.Arms()
				change()
				if mode == WatchPoll {
					return
				}
				deadline := time.After(waitLimit)
				for h.w.notifier.Arms() == before || !h.w.notifier.Watching() {
					select {
					case <-h.scans:
					case <-deadline:
						t.Fatal("the watch was not re-armed")
					}
				}
			}

			h.missing(mode) // the directory does not exist yet
			rearm(func() { mkdir(t, dir) })
			publish(t, dir, "first.json")
			h.expect("first.json")
			h.w.Done("first.json")

			// Removed, and recreated later.
			rearm(func() {
				if err := os.RemoveAll(dir); err != nil {
					t.Fatal(err)
				}
				h.missing(mode)
				mkdir(t, dir)
			})
			publish(t, dir, "second.json")
			h.expect("second.json")
			h.w.Done("second.json")

			// Renamed away and another directory put in its place; the
			// same name as before published there is a new file.
			rearm(func() {
				if err := os.Rename(dir, filepath.Join(base, "old")); err != nil {
					t.Fatal(err)
				}
				mkdir(t, dir)
			})
			publish(t, dir, "second.json")
			h.expect("second.json")
		})
	}
}

// TestWatcherReplacedDirectoryBetweenScans swaps the directory for a new
// one while the watcher reads no events at all, as when the event that
// would tell was lost: the check on the next tick must move the
// watch to the new directory.
func TestWatcherReplacedDirectoryBetweenScans(t *testing.T) {
	base := t.TempDir()
	dir := mkdir(t, filepath.Join(base, "requests"))
	hold := make(chan struct{})
	defer close(hold)
	h := startWatcher(t, dir, WatchOptions{RescanInterval: 2 * time.Millisecond}, func(w *Watcher) { w.hold = hold })
	h.waitWatching()
	before := h.w.notifier.Arms()
	if err := os.Rename(dir, filepath.Join(base, "old")); err != nil {
		t.Fatal(err)
	}
	mkdir(t, dir)
	deadline := time.After(waitLimit)
	for h.w.notifier.Arms() == before || !h.w.notifier.Watching() {
		select {
		case <-h.scans:
		case <-deadline:
			t.Fatal("the watch never moved to the new directory")
		}
	}
	publish(t, dir, "r1.json")
	h.expect("r1.json")
}

func inotifyFDs(t *testing.T) int {
	t.Helper()
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skip("no /proc/self/fd")
	}
	n := 0
	for _, e := range entries {
		if target, err := os.Readlink(filepath.Join("/proc/self/fd", e.Name())); err == nil && target == "anon_inode:inotify" {
			n++
		}
	}
	return n
}
