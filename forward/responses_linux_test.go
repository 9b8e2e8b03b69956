package forward

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/seed6639df8c/courier/mailbox"
	"github.com/seed6639df8c/courier/wire"
)

func askTo(t *testing.T, id, target string) wire.Request {
	t.Helper()
	req, err := Ask{Session: "child", Agent: "Explore", Surface: "bash", Value: "ls", Cwd: "/w"}.Request(id, target, 1)
	if err != nil {
		t.Fatal(err)
	}
	return req
}

// sharedWatcherOf is the Client's current watcher, nil if none.
func sharedWatcherOf(c *Client) *responseWatcher {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.watcher
}

// countInits counts the inotify instances Clients create in this test,
// and keeps an idle watcher for the whole test, so that a count is not at
// the mercy of a loaded machine's pauses.
func countInits(t *testing.T) *atomic.Int32 {
	var n atomic.Int32
	init, linger := inotifyInit, watcherLinger
	inotifyInit = func(flags int) (int, error) {
		n.Add(1)
		return init(flags)
	}
	watcherLinger = time.Hour
	t.Cleanup(func() { inotifyInit, watcherLinger = init, linger })
	return &n
}

// Requesters asking at once through one Client, to two parents, share one
// inotify instance; Close stops its goroutine.
func TestForwardSharesOneWatcher(t *testing.T) {
	inits := countInits(t)
	layout := mailbox.Layout{Root: t.TempDir()}
	serveAll(t, layout, "parent")
	serveAll(t, layout, "other")
	c := &Client{Layout: layout, Timeout: time.Minute}
	var wg sync.WaitGroup
	for i := range 8 {
		target := []string{"parent", "other"}[i%2]
		wg.Go(func() {
			for j := range 10 {
				req := askTo(t, fmt.Sprintf("perm-%d-%d", i, j), target)
				if d := c.Forward(t.Context(), req); !d.Approved() {
					t.Errorf("ask %d-%d to %s: decision = %+v", i, j, target, d)
				}
			}
		})
	}
	wg.Wait()
	if n := inits.Load(); n != 1 {
		t.Errorf("%d inotify instances, want 1 shared", n)
	}
	w := sharedWatcherOf(c)
	if w == nil {
		t.Fatal("no shared watcher")
	}
	w.mu.Lock()
	dirs := len(w.dirs)
	w.mu.Unlock()
	if dirs != 2 {
		t.Errorf("watching %d directories, want both parents' responses/", dirs)
	}
	c.Close()
	select {
	case <-w.exited:
	default:
		t.Fatal("the watcher's goroutine outlived Close")
	}
	c.Close() // idempotent
}

// A Forward waiting when its Client is closed goes on with a watch of its
// own and still gets its answer; a Forward after Close works too.
func TestForwardOutlivesClose(t *testing.T) {
	c, req := newClient(t)
	seen := make(chan string)
	proceed := make(chan struct{})
	serveWith(t, c, func(id string) {
		seen <- id
		<-proceed
		answerBound(t, c.Layout, "parent", id, response(true))
	})
	result := make(chan bool)
	go func() { result <- c.Forward(t.Context(), req).Approved() }()
	<-seen
	w := sharedWatcherOf(c)
	c.Close()
	if w == nil {
		t.Fatal("the Forward was not waiting through the shared watcher")
	}
	select {
	case <-w.exited:
	default:
		t.Fatal("the watcher's goroutine outlived Close")
	}
	close(proceed)
	if !<-result {
		t.Fatal("the waiting Forward lost its answer at Close")
	}

	serveOnce(t, c, response(true))
	if d := c.Forward(t.Context(), askTo(t, "perm-after-close", "parent")); !d.Approved() {
		t.Fatalf("after Close: decision = %+v", d)
	}
	if sharedWatcherOf(c) != nil {
		t.Error("a closed Client started a watcher again")
	}
	assertNoMail(t, c)
}

// A zero Client (but its Layout) works, and closes without having asked.
func TestZeroClient(t *testing.T) {
	var unused Client
	unused.Close()
	var c Client
	c.Layout = mailbox.Layout{Root: t.TempDir()}
	c.NoHeartbeat = true
	defer c.Close()
	serveOnce(t, &c, response(true))
	if d := c.Forward(t.Context(), askTo(t, "perm-zero", "parent")); !d.Approved() {
		t.Fatalf("decision = %+v", d)
	}
}

// Where inotify cannot be had (the per-user instance limit), each Forward
// watches on its own, as before the watcher was shared, and the trouble is
// reported.
func TestForwardWithoutInotifyInstances(t *testing.T) {
	init := inotifyInit
	inotifyInit = func(int) (int, error) { return -1, unix.EMFILE }
	t.Cleanup(func() { inotifyInit = init })
	c, req := newClient(t)
	var (
		mu       sync.Mutex
		reported []error
	)
	c.Watch.OnError = func(err error) {
		mu.Lock()
		defer mu.Unlock()
		reported = append(reported, err)
	}
	serveOnce(t, c, response(true))
	if d := c.Forward(t.Context(), req); !d.Approved() {
		t.Fatalf("decision = %+v", d)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(reported) == 0 || !errors.Is(reported[0], unix.EMFILE) {
		t.Errorf("reported %v, want the failed inotify_init1", reported)
	}
	if sharedWatcherOf(c) != nil {
		t.Error("a watcher without an inotify instance")
	}
	assertNoMail(t, c)
}

// A Client that polls (WatchPoll) never starts the shared watcher.
func TestForwardPolling(t *testing.T) {
	c, req := newClient(t)
	c.Watch = mailbox.WatchOptions{Mode: mailbox.WatchPoll, PollInterval: 5 * time.Millisecond}
	serveOnce(t, c, response(true))
	if d := c.Forward(t.Context(), req); !d.Approved() {
		t.Fatalf("decision = %+v", d)
	}
	if sharedWatcherOf(c) != nil {
		t.Error("a polling Client started an inotify watcher")
	}
}

// responses/ replaced while a Forward waits (renamed away and made again,
// as a tidy-up and a broker's WriteResponse can do): the watch on the old
// directory sees nothing, and the rescan finds the answer in the new one.
func TestForwardFindsTheAnswerInAReplacedDirectory(t *testing.T) {
	c, req := newClient(t)
	c.Watch.PollInterval = 10 * time.Millisecond
	respDir, _ := c.Layout.ResponsesDir("parent")
	serveWith(t, c, func(id string) {
		if err := os.Rename(respDir, respDir+".old"); err != nil {
			t.Error(err)
		}
		answerBound(t, c.Layout, "parent", id, response(true)) // WriteResponse makes responses/ again
	})
	if d := c.Forward(t.Context(), req); !d.Approved() {
		t.Fatalf("decision = %+v", d)
	}
	assertNoMail(t, c)
}

// After an event overflow, whose events are lost, the rescan wakes every
// waiter whose file is there.
func TestResponseWatcherRescansAfterAnOverflow(t *testing.T) {
	w, err := newResponseWatcher(mailbox.WatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.close()
	dir := t.TempDir()
	there, missing := filepath.Join(dir, "perm-1.json"), filepath.Join(dir, "perm-2.json")
	// Written before the watch is armed: no event will ever name it.
	if err := os.WriteFile(there, []byte("{}"), 0o600); err != nil {
		t.Fatal(err)
	}
	a, err := w.await(there)
	if err != nil {
		t.Fatal(err)
	}
	defer a.done()
	b, err := w.await(missing)
	if err != nil {
		t.Fatal(err)
	}
	defer b.done()
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

// One Forward per response path: a second wait for the same file is
// refused (and that Forward watches on its own), never a lost wake-up.
func TestResponseWatcherOneWaiterPerFile(t *testing.T) {
	w, err := newResponseWatcher(mailbox.WatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.close()
	path := filepath.Join(t.TempDir(), "perm-1.json")
	a, err := w.await(path)
	if err != nil {
		t.Fatal(err)
	}
	defer a.done()
	if _, err := w.await(path); err == nil || !strings.Contains(err.Error(), "awaited already") {
		t.Fatalf("second await: %v", err)
	}
	if _, err := w.await(filepath.Join(t.TempDir(), "missing", "perm-1.json")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("await in a missing directory: %v, want not-exist", err)
	}
}

// A parent that is not serving is still given up on after the grace,
// without a user's denial, and its empty inbox is removed.
func TestForwardGivesUpOnAParentNotServing(t *testing.T) {
	c, req := newClient(t)
	c.NoHeartbeat = false
	c.Grace, c.LivenessInterval = 50*time.Millisecond, 10*time.Millisecond
	d := c.Forward(t.Context(), req)
	if !d.Unavailable() || d.DenialReason != fmt.Sprintf(reasonNotServingFmt, "parent") {
		t.Fatalf("decision = %+v", d)
	}
	if dir, _ := c.Layout.SessionDir("parent"); exists(dir) {
		t.Error("the dead parent's inbox was left behind")
	}
}
