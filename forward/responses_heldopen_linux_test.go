//go:build linux

package forward

import (
	"os"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/seed6639df8c/courier/mailbox"
)

// await trusts a watched directory without a system call, on the grounds
// that a removed directory's IN_DELETE_SELF is "queued now, or soon". The
// kernel queues it only once the last reference to the directory is gone:
// while any process holds the old responses/ open, the watch stays on the
// removed directory, and an answer written into the new one is found only
// by the next safety rescan (RescanInterval), not at once as a watch of its
// own would. A delay, not a loss.
func TestTrustedWatchOnARemovedDirectoryHeldOpen(t *testing.T) {
	c, _ := newClient(t)
	c.Watch.RescanInterval = 3 * time.Second
	layout := c.Layout
	if err := layout.EnsureInbox("parent"); err != nil {
		t.Fatal(err)
	}
	respDir, _ := layout.ResponsesDir("parent")
	reqX, _ := layout.RequestPath("parent", "perm-x")
	// Ask X keeps the shared watcher busy (and its watch on responses/).
	resultX := make(chan bool, 1)
	go func() { resultX <- c.Forward(t.Context(), askTo(t, "perm-x", "parent")).Approved() }()
	waitFor(t, reqX)
	// responses/ is empty: a cleanup removes it while something holds it
	// open, and it is made again.
	held, err := os.Open(respDir)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	if err := unix.Rmdir(respDir); err != nil {
		t.Fatal(err)
	}
	if err := layout.EnsureInbox("parent"); err != nil {
		t.Fatal(err)
	}
	// Ask Y is answered as soon as its request is there.
	reqY, _ := layout.RequestPath("parent", "perm-y")
	resultY := make(chan bool, 1)
	go func() { resultY <- c.Forward(t.Context(), askTo(t, "perm-y", "parent")).Approved() }()
	waitFor(t, reqY)
	start := time.Now()
	answerBound(t, layout, "parent", "perm-y", response(true))
	select {
	case ok := <-resultY:
		if !ok {
			t.Fatal("ask Y not approved")
		}
	case <-time.After(time.Second):
		t.Errorf("ask Y's answer, written into the recreated responses/, not seen within 1s (RescanInterval %s)", c.Watch.RescanInterval)
		if ok := <-resultY; !ok {
			t.Fatal("ask Y not approved")
		}
		t.Logf("seen after %s", time.Since(start).Round(time.Millisecond))
	}
	answerBound(t, layout, "parent", "perm-x", response(true))
	if !<-resultX {
		t.Fatal("ask X not approved")
	}
}

// waitFor waits until path exists, with a deadline.
func waitFor(t *testing.T, path string) {
	t.Helper()
	w, err := mailbox.WatchFile(t.Context(), path, mailbox.WatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	select {
	case <-w.Arrived():
	case <-time.After(10 * time.Second):
		t.Fatalf("%s never appeared", path)
	}
}
