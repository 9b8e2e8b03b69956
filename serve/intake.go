package serve

import (
	"sync"
	"sync/atomic"
)

// names holds the request files the watcher delivered and no worker has
// read yet, in arrival order (docs/decisions/0014-fair-share-and-bounds.md:
// reading cannot tell requesters apart, and newest first, tried, buried a
// legitimate request under a flood that outpaced the reading).
type names struct {
	mu    sync.Mutex
	queue []string // oldest first
	// wake tells one idle worker that a name is waiting.
	wake chan struct{}
	// delivered says a name came since the serve loop last looked.
	delivered atomic.Bool
}

func newNames() *names { return &names{wake: make(chan struct{}, 1)} }

// push adds a delivered name.
func (n *names) push(name string) {
	n.mu.Lock()
	n.queue = append(n.queue, name)
	n.mu.Unlock()
	n.delivered.Store(true)
	select {
	case n.wake <- struct{}{}:
	default:
	}
}

// pop takes the next name to read, if one is waiting, and wakes another
// worker when more are.
func (n *names) pop() (string, bool) {
	n.mu.Lock()
	if len(n.queue) == 0 {
		n.queue = nil // let a burst's backing array go
		n.mu.Unlock()
		return "", false
	}
	name := n.queue[0]
	n.queue[0] = ""
	n.queue = n.queue[1:]
	more := len(n.queue) > 0
	n.mu.Unlock()
	if more {
		select {
		case n.wake <- struct{}{}:
		default:
		}
	}
	return name, true
}

// takeAhead takes the names the watcher offers as fast as it offers them,
// into waiting, until stop is closed or the watcher ends (then it closes
// done). A name still waiting at shutdown is answered by shutdown's pass
// over the inbox.
func (b *Broker) takeAhead(waiting *names, stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	for {
		select {
		case <-stop:
			return
		case name, ok := <-b.watcher.Ready():
			if !ok {
				return
			}
			waiting.push(name)
		}
	}
}
