//go:build linux

package forward

import (
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/seed6639df8c/courier/mailbox"
)

// watcherGoroutines counts the goroutines running a shared watcher's reader.
func watcherGoroutines() (int, string) {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	n := 0
	var keep []string
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, "(*responseWatcher).run") {
			n++
			keep = append(keep, g)
		}
	}
	return n, strings.Join(keep, "\n\n")
}

// Watchers that release themselves at once (no linger) while Forwards keep
// coming: the idle release races each await. Every ask must be answered,
// and once Close returns no watcher goroutine may be left.
func TestIdleReleaseRacesAwait(t *testing.T) {
	linger := watcherLinger
	watcherLinger = 0
	t.Cleanup(func() { watcherLinger = linger })
	layout := mailbox.Layout{Root: t.TempDir()}
	serveAll(t, layout, "parent")
	serveAll(t, layout, "other")
	for round := range 20 {
		c := &Client{Layout: layout, Timeout: 20 * time.Second,
			Watch: mailbox.WatchOptions{RescanInterval: time.Millisecond, PollInterval: time.Millisecond}}
		var wg sync.WaitGroup
		for i := range 6 {
			target := []string{"parent", "other"}[i%2]
			wg.Go(func() {
				for j := range 5 {
					req := askTo(t, fmt.Sprintf("perm-%d-%d-%d", round, i, j), target)
					if d := c.Forward(t.Context(), req); !d.Approved() {
						t.Errorf("ask %d-%d-%d: %+v", round, i, j, d)
					}
				}
			})
		}
		// Close while asks are still coming and watchers are cycling.
		wg.Go(func() {
			runtime.Gosched()
			c.Close()
			if n, stacks := watcherGoroutines(); n > 0 {
				// Only this Client's watchers run in this test.
				t.Errorf("round %d: %d watcher goroutine(s) outlived Close:\n%s", round, n, stacks)
			}
		})
		wg.Wait()
		c.Close()
	}
}

// Many asks waiting when Close comes: each falls back to a watch of its
// own and is still answered; no watcher goroutine is left after Close.
func TestCloseWhileManyWait(t *testing.T) {
	layout := mailbox.Layout{Root: t.TempDir()}
	if err := layout.EnsureInbox("parent"); err != nil {
		t.Fatal(err)
	}
	c := &Client{Layout: layout, NoHeartbeat: true, Timeout: 30 * time.Second}
	const n = 16
	reqDir, _ := layout.RequestsDir("parent")
	w := mailbox.NewWatcher(reqDir, mailbox.WatchOptions{})
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	go w.Run(ctx)
	results := make(chan bool, n)
	for i := range n {
		go func() {
			results <- c.Forward(t.Context(), askTo(t, fmt.Sprintf("perm-close-%d", i), "parent")).Approved()
		}()
	}
	var ids []string
	for len(ids) < n {
		select {
		case name := <-w.Ready():
			id, _ := mailbox.RequestIDFromName(name)
			ids = append(ids, id)
			w.Done(name)
		case <-time.After(10 * time.Second):
			t.Fatalf("%d requests seen", len(ids))
		}
	}
	c.Close()
	if k, stacks := watcherGoroutines(); k > 0 {
		t.Errorf("%d watcher goroutines after Close:\n%s", k, stacks)
	}
	for _, id := range ids {
		answerBound(t, layout, "parent", id, response(true))
	}
	for range n {
		if !<-results {
			t.Error("an ask waiting at Close lost its answer")
		}
	}
}

// responses/ removed while asks wait in it (a cleanup: it is empty) and
// made again by the broker's WriteResponse: every ask gets its answer.
func TestResponsesRemovedMidWait(t *testing.T) {
	layout := mailbox.Layout{Root: t.TempDir()}
	if err := layout.EnsureInbox("parent"); err != nil {
		t.Fatal(err)
	}
	c := &Client{Layout: layout, NoHeartbeat: true, Timeout: 30 * time.Second,
		Watch: mailbox.WatchOptions{PollInterval: 20 * time.Millisecond}}
	t.Cleanup(c.Close)
	const n = 4
	reqDir, _ := layout.RequestsDir("parent")
	respDir, _ := layout.ResponsesDir("parent")
	w := mailbox.NewWatcher(reqDir, mailbox.WatchOptions{})
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	go w.Run(ctx)
	results := make(chan bool, n)
	for i := range n {
		go func() { results <- c.Forward(t.Context(), askTo(t, fmt.Sprintf("perm-rm-%d", i), "parent")).Approved() }()
	}
	var ids []string
	for len(ids) < n {
		select {
		case name := <-w.Ready():
			id, _ := mailbox.RequestIDFromName(name)
			ids = append(ids, id)
			w.Done(name)
		case <-time.After(10 * time.Second):
			t.Fatalf("%d requests seen", len(ids))
		}
	}
	if err := unix.Rmdir(respDir); err != nil {
		t.Fatal(err)
	}
	for _, id := range ids {
		answerBound(t, layout, "parent", id, response(true)) // recreates responses/
	}
	for range n {
		select {
		case ok := <-results:
			if !ok {
				t.Error("an ask lost its answer when responses/ was made again")
			}
		case <-time.After(10 * time.Second):
			t.Fatal("an ask did not find its answer in the recreated responses/")
		}
	}
}

// The event buffer: names padded with NULs, an overflow between events,
// IN_IGNORED for a watch already replaced, and events of a wd the watcher
// does not know.
func TestDispatchParsesRecords(t *testing.T) {
	w, err := newResponseWatcher(mailbox.WatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.close()
	dir := t.TempDir()
	long := strings.Repeat("x", 31) + ".json" // 36 bytes: padded to 48
	a, err := w.await(filepath.Join(dir, "perm-1.json"))
	if err != nil {
		t.Fatal(err)
	}
	defer a.done()
	b, err := w.await(filepath.Join(dir, long))
	if err != nil {
		t.Fatal(err)
	}
	defer b.done()
	w.mu.Lock()
	wd := w.dirs[filepath.Clean(dir)].wd
	w.mu.Unlock()
	var buf []byte
	add := func(wd int32, mask uint32, name string) {
		nl := 0
		if name != "" {
			nl = (len(name) + 1 + 15) &^ 15
		}
		ev := make([]byte, unix.SizeofInotifyEvent+nl)
		binary.NativeEndian.PutUint32(ev[0:], uint32(wd))
		binary.NativeEndian.PutUint32(ev[4:], mask)
		binary.NativeEndian.PutUint32(ev[12:], uint32(nl))
		copy(ev[unix.SizeofInotifyEvent:], name)
		buf = append(buf, ev...)
	}
	add(wd+1000, unix.IN_IGNORED, "")              // unknown wd
	add(wd, unix.IN_CREATE, "perm-1.json.tmp")     // another name
	add(-1, unix.IN_Q_OVERFLOW, "")                // overflow in the middle
	add(wd, unix.IN_MOVED_TO, "perm-1.json")       // padded
	add(wd, unix.IN_CREATE, long)                  // padded to 48
	add(wd, unix.IN_CREATE|unix.IN_ISDIR, "perm-") // a prefix only
	overflow, lost := w.dispatch(buf)
	if !overflow || lost {
		t.Errorf("overflow, lost = %v, %v", overflow, lost)
	}
	for _, wt := range []*responseWaiter{a, b} {
		select {
		case <-wt.wake:
		default:
			t.Errorf("%s not woken", wt.name)
		}
	}
}

// wd numbers are not reused after rm_watch (the kernel allocates them
// cyclically), so an old watch's late IN_IGNORED cannot unwatch a new one.
func TestWDNotReusedAfterRmWatch(t *testing.T) {
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	dir := t.TempDir()
	seen := map[int]bool{}
	for range 50 {
		wd, err := unix.InotifyAddWatch(fd, dir, responseEvents)
		if err != nil {
			t.Fatal(err)
		}
		if seen[wd] {
			t.Fatalf("wd %d reused", wd)
		}
		seen[wd] = true
		if _, err := unix.InotifyRmWatch(fd, uint32(wd)); err != nil {
			t.Fatal(err)
		}
	}
	_ = os.Remove(dir)
}

// IN_IGNORED for the live watch of a directory somebody waits in: the
// watch is forgotten, a rescan is asked for, and the rescan re-arms it on
// a new wd and wakes the waiter whose file is there.
func TestIgnoredLiveWatchRearms(t *testing.T) {
	w, err := newResponseWatcher(mailbox.WatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.close()
	dir := t.TempDir()
	path := filepath.Join(dir, "perm-1.json")
	a, err := w.await(path)
	if err != nil {
		t.Fatal(err)
	}
	defer a.done()
	w.mu.Lock()
	d := w.dirs[filepath.Clean(dir)]
	old := d.wd
	w.mu.Unlock()
	// As the kernel reports a dropped watch. (Not removed for real: the
	// reader would see that IN_IGNORED first.)
	var ev [unix.SizeofInotifyEvent]byte
	binary.NativeEndian.PutUint32(ev[0:], uint32(old))
	binary.NativeEndian.PutUint32(ev[4:], unix.IN_IGNORED)
	if _, lost := w.dispatch(ev[:]); !lost {
		t.Fatal("IN_IGNORED of a watch somebody waits on not reported lost")
	}
	if err := os.WriteFile(path, []byte("{}"), 0o600); err != nil {
		t.Fatal(err)
	}
	if lost := w.rescan(); lost {
		t.Fatal("rescan could not re-arm")
	}
	w.mu.Lock()
	nw := d.wd
	w.mu.Unlock()
	if nw < 0 {
		t.Errorf("wd after rescan = %d (old %d)", nw, old)
	}
	select {
	case <-a.wake:
	default:
		t.Error("the rescan did not wake the waiter")
	}
}
