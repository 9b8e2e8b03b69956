package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/seed6639df8c/courier/mailbox"
)

// responseCounter counts the distinct response files that appear in a
// responses/ directory. It is armed before the broker starts, so no
// response is missed; events are hints, and an overflow or a stall is
// settled by listing the directory, as the broker's own watcher does.
//
// When no inotify instance is to be had (the per-user limit is shared
// with every other process of this user, tests that exhaust it on purpose
// included), it lists the directory every listInterval instead, which
// makes the figure up to that much later and costs the broker some CPU;
// Polled says so.
type responseCounter struct {
	dir    string
	fsw    *fsnotify.Watcher // nil: listing
	seen   map[string]struct{}
	Polled bool
}

const listInterval = 50 * time.Millisecond

func newResponseCounter(dir string) (*responseCounter, error) {
	c := &responseCounter{dir: dir, seen: make(map[string]struct{})}
	fsw, err := fsnotify.NewWatcher()
	if err != nil {
		c.Polled = true
		return c, nil
	}
	if err := fsw.Add(dir); err != nil {
		fsw.Close()
		return nil, fmt.Errorf("watching responses: %w", err)
	}
	c.fsw = fsw
	return c, nil
}

func (c *responseCounter) close() {
	if c.fsw != nil {
		c.fsw.Close()
	}
}

// rescan adds every response now listed.
func (c *responseCounter) rescan() error {
	f, err := os.Open(c.dir)
	if err != nil {
		return fmt.Errorf("listing responses: %w", err)
	}
	names, err := f.Readdirnames(-1)
	f.Close()
	if err != nil {
		return fmt.Errorf("listing responses: %w", err)
	}
	for _, n := range names {
		if mailbox.IsMailName(n) {
			c.seen[n] = struct{}{}
		}
	}
	return nil
}

// await returns when want responses exist, with the time the last one
// was seen.
func (c *responseCounter) await(ctx context.Context, want int, timeout time.Duration) (time.Time, error) {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	// A listing of 10,000 names costs milliseconds of the CPU the broker
	// is using, so it is the fallback, not the clock.
	every := 500 * time.Millisecond
	var events <-chan fsnotify.Event
	var errs <-chan error
	if c.fsw != nil {
		events, errs = c.fsw.Events, c.fsw.Errors
	} else {
		every = listInterval
	}
	stall := time.NewTicker(every)
	defer stall.Stop()
	lastEvent := time.Now()
	for len(c.seen) < want {
		select {
		case <-ctx.Done():
			return time.Time{}, context.Cause(ctx)
		case <-deadline.C:
			if err := c.rescan(); err != nil {
				return time.Time{}, err
			}
			if len(c.seen) >= want {
				return time.Now(), nil
			}
			return time.Time{}, fmt.Errorf("%d of %d responses after %s: %w", len(c.seen), want, timeout, errTimeout)
		case ev, ok := <-events:
			if !ok {
				return time.Time{}, errors.New("watching responses: watcher closed")
			}
			lastEvent = time.Now()
			if ev.Has(fsnotify.Create) && mailbox.IsMailName(filepath.Base(ev.Name)) {
				c.seen[filepath.Base(ev.Name)] = struct{}{}
			}
		case err, ok := <-errs:
			if !ok {
				return time.Time{}, errors.New("watching responses: watcher closed")
			}
			if !errors.Is(err, fsnotify.ErrEventOverflow) {
				return time.Time{}, fmt.Errorf("watching responses: %w", err)
			}
			if err := c.rescan(); err != nil {
				return time.Time{}, err
			}
		case <-stall.C:
			if c.fsw != nil && time.Since(lastEvent) < 400*time.Millisecond {
				continue // events flow: they are the count
			}
			if err := c.rescan(); err != nil {
				return time.Time{}, err
			}
		}
	}
	return time.Now(), nil
}
