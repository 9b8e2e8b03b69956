package mailbox

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/seed6639df8c/courier/internal/filewatch"
)

// waitLimit bounds every wait in these tests; reaching it is a failure,
// never a pass.
const waitLimit = 10 * time.Second

// fastTempDir is a temporary directory on tmpfs when there is one, so
// that tests creating thousands of files stay quick.
func fastTempDir(t testing.TB) string {
	t.Helper()
	if fi, err := os.Stat("/dev/shm"); err == nil && fi.IsDir() {
		dir, err := os.MkdirTemp("/dev/shm", "courier-mailbox-test-")
		if err == nil {
			t.Cleanup(func() { os.RemoveAll(dir) })
			return dir
		}
	}
	return t.TempDir()
}

// harness runs a Watcher for one test and collects what it reports.
type harness struct {
	t     *testing.T
	w     *Watcher
	scans chan struct{}
	errs  chan error
}

// startWatcher runs a watcher on dir until the test ends, and checks
// then that Run returned and closed Ready.
func startWatcher(t *testing.T, dir string, opts WatchOptions, configure ...func(*Watcher)) *harness {
	t.Helper()
	h := &harness{t: t, scans: make(chan struct{}, 1), errs: make(chan error, 64)}
	opts.OnError = func(err error) {
		select {
		case h.errs <- err:
		default:
		}
	}
	h.w = NewWatcher(dir, opts)
	h.w.afterScan = func() {
		select {
		case h.scans <- struct{}{}:
		default:
		}
	}
	for _, c := range configure {
		c(h.w)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- h.w.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Run: %v", err)
			}
		case <-time.After(waitLimit):
			t.Error("Run did not return after cancel")
		}
		for range h.w.Ready() { // closed by Run; drains a name offered at cancel
		}
	})
	return h
}

// next receives one delivered name.
func (h *harness) next() string {
	h.t.Helper()
	select {
	case name, ok := <-h.w.Ready():
		if !ok {
			h.t.Fatal("Ready closed")
		}
		return name
	case <-time.After(waitLimit):
		h.t.Fatal("nothing delivered")
	}
	return ""
}

// expect receives exactly the given names, in any order.
func (h *harness) expect(names ...string) {
	h.t.Helper()
	want := map[string]bool{}
	for _, n := range names {
		want[n] = true
	}
	for range names {
		got := h.next()
		if !want[got] {
			h.t.Fatalf("delivered %q, want one of %v", got, names)
		}
		delete(want, got)
	}
}

// quiet asserts that nothing is delivered while the watcher completes n
// more scans of the directory.
func (h *harness) quiet(n int) {
	h.t.Helper()
	select {
	case <-h.scans: // a scan that may predate the call
	default:
	}
	deadline := time.After(waitLimit)
	for i := 0; i < n; {
		select {
		case name := <-h.w.Ready():
			h.t.Fatalf("delivered %q, want nothing", name)
		case <-h.scans:
			i++
		case <-deadline:
			h.t.Fatalf("only %d of %d scans happened", i, n)
		}
	}
}

// waitWatching waits until inotify is (re)armed.
func (h *harness) waitWatching() {
	h.t.Helper()
	deadline := time.After(waitLimit)
	for !h.w.notifier.Watching() {
		select {
		case <-h.scans:
		case <-deadline:
			h.t.Fatal("inotify never armed")
		}
	}
}

// rescanned asks for a scan and waits until one has run since.
func (h *harness) rescanned() {
	h.t.Helper()
	select {
	case <-h.scans: // a scan that may predate the call
	default:
	}
	h.w.Rescan()
	select {
	case <-h.scans:
	case <-time.After(waitLimit):
		h.t.Fatal("no rescan")
	}
}

// quietAfterRescans asks for n scans, one after the other, and asserts
// that nothing is then waiting to be delivered: quiet for a watcher with
// no safety rescan of its own. It sees what the watcher's loop has taken
// up (releases, scans, events read), not an event still unread.
func (h *harness) quietAfterRescans(n int) {
	h.t.Helper()
	for range n {
		h.rescanned()
	}
	// The watcher's turn before this scan counted what the last one
	// queued (Backlog), which an offer not yet taken would still be.
	h.rescanned()
	if n := h.w.Backlog(); n != 0 {
		h.t.Fatalf("%d names waiting to be delivered, want none", n)
	}
}

// unpublish removes the file name from dir, as a consumer or a child that
// gave up does.
func unpublish(t testing.TB, dir, name string) {
	t.Helper()
	if err := os.Remove(filepath.Join(dir, name)); err != nil {
		t.Fatal(err)
	}
}

// rewriteInPlace writes over the start of the file at path, in one write:
// one Write event, the same inode.
func rewriteInPlace(t testing.TB, path string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteAt([]byte("{}"), 0); err != nil {
		t.Fatal(err)
	}
}

// publish drops a file the way pi and courier do: write aside, rename in.
func publish(t testing.TB, dir, name string) {
	t.Helper()
	tmp := filepath.Join(filepath.Dir(dir), "."+name+".tmp")
	if err := os.WriteFile(tmp, []byte(`{"id":"x"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, name)); err != nil {
		t.Fatal(err)
	}
}

func mkdir(t testing.TB, dir string) string {
	t.Helper()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestParseWatchMode(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want WatchMode
		ok   bool
	}{{"fsnotify", WatchFSNotify, true}, {"poll", WatchPoll, true}, {"", 0, false}, {"inotify", 0, false}, {"POLL", 0, false}} {
		got, err := ParseWatchMode(tt.in)
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("ParseWatchMode(%q) = %v, %v", tt.in, got, err)
		}
		if tt.ok && got.String() != tt.in {
			t.Errorf("%v.String() = %q, want %q", got, got.String(), tt.in)
		}
	}
	fs := flag.NewFlagSet("broker", flag.ContinueOnError)
	fs.SetOutput(new(strings.Builder))
	var mode WatchMode
	fs.TextVar(&mode, "watch", WatchFSNotify, "fsnotify or poll")
	if err := fs.Parse([]string{"--watch=poll"}); err != nil || mode != WatchPoll {
		t.Errorf("--watch=poll: %v, %v", mode, err)
	}
	if err := fs.Parse([]string{"--watch=nfs"}); err == nil {
		t.Error("--watch=nfs accepted")
	}
}

func TestWatcherDeliversFilesPresentBeforeStart(t *testing.T) {
	for _, mode := range []WatchMode{WatchFSNotify, WatchPoll} {
		t.Run(mode.String(), func(t *testing.T) {
			dir := mkdir(t, filepath.Join(t.TempDir(), "requests"))
			for _, name := range []string{"a.json", "b.json", "c.json", ".hidden.json", "d.json.4242.1757000000000.tmp", "notes.txt"} {
				touch(t, filepath.Join(dir, name))
			}
			h := startWatcher(t, dir, WatchOptions{Mode: mode, RescanInterval: 2 * time.Millisecond, PollInterval: 2 * time.Millisecond})
			// One scan sorts: pi 20.x ids come out in creation order.
			if got := []string{h.next(), h.next(), h.next()}; fmt.Sprint(got) != "[a.json b.json c.json]" {
				t.Errorf("delivered %v", got)
			}
			h.quiet(2)
		})
	}
}

func TestWatcherDeliversNewFiles(t *testing.T) {
	writers := []struct {
		name  string
		write func(t *testing.T, l Layout, id string)
	}{
		{"atomic writer", func(t *testing.T, l Layout, id string) {
			if err := l.WriteRequest("s", id, []byte("{}")); err != nil {
				t.Fatal(err)
			}
		}},
		{"in-place writer", func(t *testing.T, l Layout, id string) {
			p, _ := l.RequestPath("s", id)
			touch(t, p)
		}},
	}
	for _, mode := range []WatchMode{WatchFSNotify, WatchPoll} {
		for _, wr := range writers {
			t.Run(mode.String()+"/"+wr.name, func(t *testing.T) {
				l := Layout{Root: t.TempDir()}
				if err := l.EnsureInbox("s"); err != nil {
					t.Fatal(err)
				}
				dir, _ := l.RequestsDir("s")
				// With an hour's rescan, only events can deliver
				// in fsnotify mode.
				h := startWatcher(t, dir, WatchOptions{Mode: mode, RescanInterval: time.Hour, PollInterval: 5 * time.Millisecond})
				if mode == WatchFSNotify {
					h.waitWatching()
				}
				for i := range 3 {
					id := "perm-" + strconv.Itoa(i)
					wr.write(t, l, id)
					if got := h.next(); got != id+".json" {
						t.Fatalf("delivered %q, want %s.json", got, id)
					}
				}
			})
		}
	}
}

func TestWatcherDedupe(t *testing.T) {
	eachLook(t, "dedupe", func(t *testing.T, late bool) {
		dir := mkdir(t, filepath.Join(t.TempDir(), "requests"))
		// Scans only when the test asks: a scan that saw an in-place
		// write before its Write event was read delivers the file, and
		// the event, read while it is in flight, rightly delivers it once
		// more.
		h := startWatcher(t, dir, WatchOptions{RescanInterval: -1, LookLate: late})
		h.waitWatching()
		path := filepath.Join(dir, "r1.json")

		publish(t, dir, "r1.json")
		h.expect("r1.json")
		// In flight: neither scans nor new events hand it out again, not
		// even when the file is replaced under the consumer.
		h.quietAfterRescans(3)
		publish(t, dir, "r1.json")
		h.quietAfterRescans(3)
		// Done reveals that what the consumer finished is not what is
		// there now: the replacement is new mail.
		h.w.Done("r1.json")
		h.expect("r1.json")

		// Done while the file stays (a request the broker could not
		// remove): not again, however many scans see it.
		h.w.Done("r1.json")
		h.quietAfterRescans(3)
		h.w.Done("r1.json") // a second Done changes nothing
		h.w.Done("never-delivered.json")
		h.quietAfterRescans(2)

		// Rewritten in place (one write, so one Write event), or
		// replaced, under the same name: new mail.
		rewriteInPlace(t, path)
		h.expect("r1.json")
		h.w.Done("r1.json")
		h.quietAfterRescans(2)
		publish(t, dir, "r1.json")
		h.expect("r1.json")
		h.w.Done("r1.json")
		h.quietAfterRescans(2)

		// Gone and back: new mail.
		if err := os.Remove(path); err != nil {
			t.Fatal(err)
		}
		h.quietAfterRescans(2)
		publish(t, dir, "r1.json")
		h.expect("r1.json")
		h.w.Done("r1.json")
		if late {
			// Found by the event of a name the watcher did not know, so
			// never identified: delivered once more, identified, after a
			// Done while it stays (0037), and then not again.
			h.expect("r1.json")
			h.w.Done("r1.json")
		}
		h.quietAfterRescans(3)
	})
}

func TestWatcherDoneSeesReplacementWhileInFlight(t *testing.T) {
	eachLook(t, "replaced", func(t *testing.T, late bool) {
		dir := mkdir(t, filepath.Join(t.TempDir(), "requests"))
		h := startWatcher(t, dir, WatchOptions{RescanInterval: time.Hour, LookLate: late})
		h.waitWatching()
		publish(t, dir, "r1.json")
		h.expect("r1.json")
		// The broker answers and deletes the request; before it says
		// Done, a child reuses the id.
		unpublish(t, dir, "r1.json")
		publish(t, dir, "r1.json")
		h.w.Done("r1.json")
		h.expect("r1.json")
	})
}

func TestWatcherForgetRetries(t *testing.T) {
	for _, mode := range []WatchMode{WatchFSNotify, WatchPoll} {
		t.Run(mode.String(), func(t *testing.T) {
			dir := mkdir(t, filepath.Join(t.TempDir(), "requests"))
			h := startWatcher(t, dir, WatchOptions{Mode: mode, RescanInterval: 2 * time.Millisecond, PollInterval: 2 * time.Millisecond})
			publish(t, dir, "r1.json")
			h.expect("r1.json")
			h.quiet(2)
			for range 3 { // a request that keeps failing keeps coming back
				h.w.Forget("r1.json")
				h.expect("r1.json")
			}
			// Forgotten, then gone: nothing.
			unpublish(t, dir, "r1.json")
			h.w.Forget("r1.json")
			h.quiet(3)
		})
	}
}

// TestWatcherNeverHandsOutANameTwiceAtOnce runs several consumers against
// a stream of events and rescans for the same names.
func TestWatcherNeverHandsOutANameTwiceAtOnce(t *testing.T) {
	dir := mkdir(t, filepath.Join(fastTempDir(t), "requests"))
	h := startWatcher(t, dir, WatchOptions{RescanInterval: time.Millisecond})
	const files, rounds = 20, 30
	var (
		mu       sync.Mutex
		inFlight = map[string]bool{}
		handled  int
	)
	ctx, cancel := context.WithTimeout(t.Context(), waitLimit)
	defer cancel()
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-ctx.Done():
					return
				case name := <-h.w.Ready():
					mu.Lock()
					if inFlight[name] {
						t.Errorf("%s handed out while in flight", name)
					}
					inFlight[name] = true
					mu.Unlock()
					// A Write event mid-flight.
					if err := os.WriteFile(filepath.Join(dir, name), []byte("{}"), 0o600); err != nil {
						t.Error(err)
					}
					mu.Lock()
					delete(inFlight, name)
					handled++
					done := handled == files*rounds
					mu.Unlock()
					h.w.Forget(name) // always retry: maximal redelivery pressure
					if done {
						cancel()
					}
				}
			}
		}()
	}
	for i := range files {
		publish(t, dir, fmt.Sprintf("r%02d.json", i))
	}
	wg.Wait()
	if !errors.Is(ctx.Err(), context.Canceled) {
		t.Fatalf("handled %d of %d before the deadline", handled, files*rounds)
	}
}

func TestWatcherRunStopsCleanly(t *testing.T) {
	before := inotifyFDs(t)
	dir := mkdir(t, filepath.Join(t.TempDir(), "requests"))
	publish(t, dir, "r1.json")
	publish(t, dir, "r2.json")
	w := NewWatcher(dir, WatchOptions{})
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	select {
	case <-w.Ready(): // running; r2.json is now offered and never taken
	case <-time.After(waitLimit):
		t.Fatal("nothing delivered")
	}
	if err := w.Run(ctx); err == nil {
		t.Error("second Run succeeded")
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(waitLimit):
		t.Fatal("Run did not return")
	}
	if _, ok := <-w.Ready(); ok {
		t.Error("Ready still open after Run returned")
	}
	w.Done("r1.json") // harmless after the end
	if after := inotifyFDs(t); after != before {
		t.Errorf("%d inotify descriptors open after Run, %d before", after, before)
	}
}

// With a negative RescanInterval the owner drives the safety rescan: the
// watcher keeps no timer of its own while inotify is armed, and Rescan
// finds what events missed.
func TestWatcherRescanOnRequest(t *testing.T) {
	dir := mkdir(t, filepath.Join(t.TempDir(), "requests"))
	hold := make(chan struct{}) // events are never read: only a scan can deliver
	h := startWatcher(t, dir, WatchOptions{RescanInterval: -1}, func(w *Watcher) { w.hold = hold })
	h.waitWatching()
	publish(t, dir, "a.json")
	h.w.Rescan()
	h.expect("a.json")
	publish(t, dir, "b.json")
	h.w.Rescan()
	h.w.Rescan() // coalesces with the first, or runs a second scan: either way, b once
	h.expect("b.json")
}

func TestWatcherInterval(t *testing.T) {
	const poll, rescan = 20 * time.Millisecond, 3 * time.Second
	for _, tc := range []struct {
		name  string
		state filewatch.State
		opts  WatchOptions
		want  time.Duration
	}{
		{"armed", filewatch.Armed, WatchOptions{RescanInterval: rescan, PollInterval: poll}, rescan},
		{"armed, default", filewatch.Armed, WatchOptions{}, DefaultRescanInterval},
		{"armed, owner rescans", filewatch.Armed, WatchOptions{RescanInterval: -1, PollInterval: poll}, 0},
		{"not armed", filewatch.Unarmed, WatchOptions{RescanInterval: rescan, PollInterval: poll}, poll},
		{"not armed, owner rescans", filewatch.Unarmed, WatchOptions{RescanInterval: -1, PollInterval: poll}, poll},
		{"poll mode, owner rescans", filewatch.Polling, WatchOptions{Mode: WatchPoll, RescanInterval: -1, PollInterval: poll}, poll},
	} {
		if got := tc.opts.filewatch().Timing.Next(tc.state); got != tc.want {
			t.Errorf("%s: interval %v, want %v", tc.name, got, tc.want)
		}
	}
	// The state a Watcher's Dir reports in each mode, before and after
	// its directory is there.
	dir := filepath.Join(t.TempDir(), "requests")
	for _, tc := range []struct {
		mode           WatchMode
		missing, there filewatch.State
	}{
		{WatchFSNotify, missingState(), filewatch.Armed},
		{WatchPoll, filewatch.Polling, filewatch.Polling},
	} {
		w := NewWatcher(dir, WatchOptions{Mode: tc.mode})
		w.notifier.Check()
		if got := w.notifier.State(); got != tc.missing {
			t.Errorf("%s, no directory: state %v, want %v", tc.mode, got, tc.missing)
		}
		mkdir(t, dir)
		w.notifier.Check()
		if got := w.notifier.State(); got != tc.there {
			t.Errorf("%s, directory there: state %v, want %v", tc.mode, got, tc.there)
		}
		w.notifier.Close()
		os.Remove(dir)
	}
}
