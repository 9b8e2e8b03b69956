package serve

import (
	"testing"
	"time"

	"github.com/seed6639df8c/courier/mailbox"
)

// The inbox's watcher is set for a broker: it looks late at new files (a
// flood's request costs the watcher's goroutine no system call), rides
// the sweep's tick for its safety rescan, and notices a removed inbox
// coming back quickly. What an operator set is kept.
func TestInboxWatchOptions(t *testing.T) {
	for _, tt := range []struct {
		name   string
		set    mailbox.WatchOptions
		rescan time.Duration
		poll   time.Duration
	}{
		{"defaults", mailbox.WatchOptions{}, -1, 20 * time.Millisecond},
		{"set", mailbox.WatchOptions{RescanInterval: time.Second, PollInterval: time.Second}, time.Second, time.Second},
		{"polling", mailbox.WatchOptions{Mode: mailbox.WatchPoll}, 0, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			b := &Broker{Watch: tt.set}
			got := b.watchOptions()
			if !got.LookLate {
				t.Error("LookLate is off: every request would cost the watcher an lstat")
			}
			if got.RescanInterval != tt.rescan || got.PollInterval != tt.poll {
				t.Errorf("rescan %v, poll %v; want %v, %v", got.RescanInterval, got.PollInterval, tt.rescan, tt.poll)
			}
			if got.OnError == nil {
				t.Error("no OnError: the watcher's trouble would go unreported")
			}
		})
	}
}
