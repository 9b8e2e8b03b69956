//go:build linux

package forward

import (
	"context"
	"fmt"
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
		if strings.Contains(g, "filewatch.(*Shared).run") {
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
