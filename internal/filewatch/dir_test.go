package filewatch

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// dirSources are the sources a Dir can read: the platform's, and on Linux
// fsnotify too, which is what other systems use (with kqueue below it).
func dirSources() map[string]func(dir string, opts Options) *Dir {
	sources := map[string]func(string, Options) *Dir{runtime.GOOS: NewDir}
	if runtime.GOOS == "linux" {
		sources["fsnotify"] = func(dir string, opts Options) *Dir {
			dir = filepath.Clean(dir)
			return newDirWith(dir, opts, newFSNotifySource(dir))
		}
	}
	return sources
}

// awaitEvent reads d until fn accepts an event or a Result; with a
// deadline.
func awaitEvent(t *testing.T, d *Dir, what string, fn func(ev *Event, r Result) bool) {
	t.Helper()
	deadline := time.After(waitLimit)
	for {
		select {
		case b := <-d.Batches():
			found := false
			r := d.Handle(b, func(ev Event) { found = found || fn(&ev, Result{}) })
			if found || fn(nil, r) {
				return
			}
		case <-deadline:
			t.Fatalf("no %s", what)
		}
	}
}

func expectEvent(t *testing.T, d *Dir, name string, op Op) {
	t.Helper()
	awaitEvent(t, d, fmt.Sprintf("event %v for %s", op, name), func(ev *Event, _ Result) bool {
		if ev != nil && ev.Path != filepath.Join(d.Path(), ev.Name) {
			t.Errorf("event for %s: path %s", ev.Name, ev.Path)
		}
		return ev != nil && ev.Name == name && ev.Op&op != 0
	})
}

func expectLost(t *testing.T, d *Dir) {
	t.Helper()
	awaitEvent(t, d, "end of the watch", func(ev *Event, r Result) bool { return ev == nil && r.Lost })
	if d.State() != Unarmed || d.Watching() {
		t.Fatalf("after the directory went: state %v, watching %v", d.State(), d.Watching())
	}
}

func expectArmed(t *testing.T, d *Dir, arms int64) {
	t.Helper()
	if d.State() != Armed || !d.Watching() || d.Arms() != arms {
		t.Fatalf("state %v, watching %v, %d arms; want armed, %d arms", d.State(), d.Watching(), d.Arms(), arms)
	}
}

// The life of a watched directory: missing, made, written in, removed,
// made again, and replaced while its events are not read.
func TestDirLifecycle(t *testing.T) {
	for name, newDir := range dirSources() {
		t.Run(name, func(t *testing.T) {
			// What a missing directory leaves: inotify watches its
			// ancestor, fsnotify polls.
			missing := Unarmed
			if name == "linux" {
				missing = Awaiting
			}
			base := t.TempDir()
			dir := filepath.Join(base, "requests")
			var reported []error
			d := newDir(dir, Options{OnError: func(err error) { reported = append(reported, err) }})
			defer d.Close()

			d.Check()
			if d.State() != missing || d.Watching() || d.Awaiting() != (missing == Awaiting) || d.Arms() != 0 {
				t.Fatalf("no directory: state %v, watching %v, awaiting %v, %d arms", d.State(), d.Watching(), d.Awaiting(), d.Arms())
			}
			if err := os.Mkdir(dir, 0o700); err != nil {
				t.Fatal(err)
			}
			d.Check()
			expectArmed(t, d, 1)
			d.Check() // the same directory: nothing moves
			expectArmed(t, d, 1)

			touch(t, filepath.Join(base, "a.json"))
			if err := os.Rename(filepath.Join(base, "a.json"), filepath.Join(dir, "a.json")); err != nil {
				t.Fatal(err)
			}
			expectEvent(t, d, "a.json", Create)
			if err := os.WriteFile(filepath.Join(dir, "a.json"), []byte("{}"), 0o600); err != nil {
				t.Fatal(err)
			}
			expectEvent(t, d, "a.json", Write)
			if err := os.Rename(filepath.Join(dir, "a.json"), filepath.Join(base, "a.json")); err != nil {
				t.Fatal(err)
			}
			expectEvent(t, d, "a.json", Rename)
			touch(t, filepath.Join(dir, "b.json"))
			if err := os.Remove(filepath.Join(dir, "b.json")); err != nil {
				t.Fatal(err)
			}
			expectEvent(t, d, "b.json", Remove)

			// Removed, and made again.
			if err := os.RemoveAll(dir); err != nil {
				t.Fatal(err)
			}
			expectLost(t, d)
			d.Check()
			if d.State() != missing {
				t.Fatalf("no directory: state %v, want %v", d.State(), missing)
			}
			if err := os.Mkdir(dir, 0o700); err != nil {
				t.Fatal(err)
			}
			d.Check()
			expectArmed(t, d, 2)

			// Renamed away and replaced, its events unread: the next
			// Check moves the watch.
			if err := os.Rename(dir, filepath.Join(base, "old")); err != nil {
				t.Fatal(err)
			}
			if err := os.Mkdir(dir, 0o700); err != nil {
				t.Fatal(err)
			}
			d.Check()
			expectArmed(t, d, 3)
			touch(t, filepath.Join(dir, "c.json"))
			expectEvent(t, d, "c.json", Create)
			touch(t, filepath.Join(base, "old", "stale.json"))

			if len(reported) > 0 {
				t.Errorf("reported %v; a missing directory is normal", reported)
			}
			d.Close()
			if d.Watching() || d.Batches() != nil {
				t.Error("still watching after Close")
			}
			d.Close() // idempotent
		})
	}
}

// A Dir that polls arms nothing and reads nothing.
func TestDirPolling(t *testing.T) {
	d := NewDir(t.TempDir(), Options{Poll: true})
	defer d.Close()
	d.Check()
	if d.State() != Polling || d.Watching() || d.Batches() != nil || d.Arms() != 0 {
		t.Errorf("polling: state %v, watching %v", d.State(), d.Watching())
	}
}

// No inotify instance (the per-user limit): the Dir says once that it
// polls, polls, and arms as soon as an instance can be had.
func TestDirFallsBackToPolling(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("inotify is Linux only")
	}
	dir := t.TempDir()
	var (
		mu       sync.Mutex
		reported []error
	)
	src := newInotifySource(filepath.Clean(dir))
	src.open = func() (*Inotify, error) { return nil, fmt.Errorf("inotify_init1: %w", syscall.EMFILE) }
	d := newDirWith(filepath.Clean(dir), Options{OnError: func(err error) {
		mu.Lock()
		defer mu.Unlock()
		reported = append(reported, err)
	}}, src)
	defer d.Close()
	d.Check()
	d.Check()
	if d.State() != Unarmed || d.Watching() {
		t.Fatalf("without an instance: state %v", d.State())
	}
	mu.Lock()
	if len(reported) != 1 || !errors.Is(reported[0], syscall.EMFILE) || !strings.Contains(reported[0].Error(), "polling instead") {
		t.Errorf("reported %v, want the failure once, and that it polls", reported)
	}
	mu.Unlock()
	src.open = OpenInotify
	d.Check()
	expectArmed(t, d, 1)
}

// Close releases the instance: no inotify descriptor is left.
func TestDirCloseReleasesTheInstance(t *testing.T) {
	before := inotifyFDs(t)
	d := NewDir(t.TempDir(), Options{})
	d.Check()
	if runtime.GOOS == "linux" && inotifyFDs(t) != before+1 {
		t.Errorf("%d inotify descriptors while armed, %d before", inotifyFDs(t), before)
	}
	d.Close()
	if after := inotifyFDs(t); after != before {
		t.Errorf("%d inotify descriptors after Close, %d before", after, before)
	}
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
