package forward

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/seed6639df8c/courier/internal/filewatch"
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
	open, linger := openInotify, watcherLinger
	openInotify = func() (*filewatch.Inotify, error) {
		n.Add(1)
		return open()
	}
	watcherLinger = time.Hour
	t.Cleanup(func() { openInotify, watcherLinger = open, linger })
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
	if dirs := w.Dirs(); dirs != 2 {
		t.Errorf("watching %d directories, want both parents' responses/", dirs)
	}
	c.Close()
	select {
	case <-w.Exited():
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
	case <-w.Exited():
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
	open := openInotify
	openInotify = func() (*filewatch.Inotify, error) { return nil, fmt.Errorf("inotify_init1: %w", unix.EMFILE) }
	t.Cleanup(func() { openInotify = open })
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
