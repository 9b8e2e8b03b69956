package reliability

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/fsnotify/fsnotify"
	"github.com/seed6639df8c/courier/mailbox"
	"github.com/seed6639df8c/courier/wire"
)

// responseObserver counts every file renamed into a responses/ directory
// and reads each one: a name published twice is an ask answered twice, a
// file that does not decode is a partial answer.
type responseObserver struct {
	mu       sync.Mutex
	creates  map[string]int
	bad      []string
	problems []string
	w        *fsnotify.Watcher
	done     chan struct{}
}

// newWatcher is an fsnotify watcher for the test's own observers. The
// user's inotify instances (128) are shared with every other process of
// the user on the machine, brokers and children included: when they are
// all taken, wait for one rather than fail.
func newWatcher(t *testing.T) *fsnotify.Watcher {
	t.Helper()
	var w *fsnotify.Watcher
	var last error
	waitFor(t, "an inotify instance", func() bool {
		w, last = fsnotify.NewWatcher()
		return last == nil
	})
	return w
}

func observeResponses(t *testing.T, dir string) *responseObserver {
	t.Helper()
	w := newWatcher(t)
	if err := w.Add(dir); err != nil {
		w.Close()
		t.Fatal(err)
	}
	o := &responseObserver{creates: map[string]int{}, w: w, done: make(chan struct{})}
	go o.run()
	t.Cleanup(o.close)
	return o
}

func (o *responseObserver) run() {
	defer close(o.done)
	for {
		select {
		case ev, ok := <-o.w.Events:
			if !ok {
				return
			}
			name := filepath.Base(ev.Name)
			if !ev.Has(fsnotify.Create) || !mailbox.IsMailName(name) {
				continue
			}
			data, err := mailbox.ReadFile(ev.Name)
			o.mu.Lock()
			o.creates[name]++
			if err == nil {
				if _, _, err = wire.DecodeResponse(data); err != nil {
					o.bad = append(o.bad, fmt.Sprintf("%s: %v: %q", name, err, data))
				}
			} else if !errors.Is(err, os.ErrNotExist) {
				o.bad = append(o.bad, fmt.Sprintf("%s: %v", name, err))
			}
			o.mu.Unlock()
		case err, ok := <-o.w.Errors:
			if !ok {
				return
			}
			// An overflow loses events: the counts are then unproven.
			o.mu.Lock()
			o.problems = append(o.problems, err.Error())
			o.mu.Unlock()
		}
	}
}

func (o *responseObserver) close() {
	o.w.Close()
	<-o.done
}

// twice lists the names published more than once.
func (o *responseObserver) twice() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	var names []string
	for name, n := range o.creates {
		if n > 1 {
			names = append(names, fmt.Sprintf("%s×%d", name, n))
		}
	}
	slices.Sort(names)
	return names
}
