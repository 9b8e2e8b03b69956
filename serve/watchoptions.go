package serve

import (
	"fmt"
	"time"

	"github.com/seed6639df8c/courier/mailbox"
)

// watchOptions is how the broker watches its inbox: the operator's
// settings (Watch), with what a broker needs of the rest.
func (b *Broker) watchOptions() mailbox.WatchOptions {
	opts := b.Watch
	if opts.Mode == mailbox.WatchFSNotify && opts.PollInterval <= 0 {
		// In fsnotify mode the poll interval only applies while the inbox
		// directory is missing (a pi child's cleanup removes it when
		// empty); notice its return quickly.
		opts.PollInterval = 20 * time.Millisecond
	}
	if opts.Mode == mailbox.WatchFSNotify && opts.RescanInterval == 0 {
		// The inbox's safety rescan rides the sweep's tick (Run): one
		// timer wakes an idle broker once a second, where the watcher's
		// own would drift out of phase and wake it a second time.
		opts.RescanInterval = -1
	}
	// The broker removes what it answers (Removed) and checks every file
	// it reads against what it answered: a file delivered once more
	// costs a read, where a look at every file found costs a flood a
	// system call per request on the watcher's goroutine.
	opts.LookLate = true
	if opts.OnError == nil {
		opts.OnError = func(err error) { b.report(fmt.Errorf("watching the inbox: %w", err)) }
	}
	return opts
}
