package serve

import (
	"context"
	"sync/atomic"
	"testing"
	"time"
)

// While a flood crowds the queue and the inbox watcher still has names for
// the reading (its Backlog), a worker leaves the flood's jobs: the names
// behind the flood's come no sooner than the watcher's turns, and a flood
// job competed with them for the processors. Another requester's job is
// done meanwhile (takeLight), and the flood's are all done once the
// watcher has nothing left.
func TestFloodJobsWaitForTheWatchersNames(t *testing.T) {
	b := &Broker{}
	b.prepare()
	const flood = 3 * crowdedJobs
	var floodRan atomic.Int64
	allRan := make(chan struct{})
	for range flood {
		b.fair.push("flooder", func() {
			if floodRan.Add(1) == flood {
				close(allRan)
			}
		})
	}
	legitRan := make(chan struct{})
	b.fair.push("legit", func() { close(legitRan) })

	// The watcher's backlog as the worker sees it; each look keeps the
	// queue crowded (reading is under way while the watcher has names)
	// and is counted, so that the test waits for looks, not for time.
	var backlog atomic.Int64
	backlog.Store(1)
	looks := make(chan struct{}, 1)
	b.watcherBacklog = func() int {
		b.fair.readOne(time.Now())
		select {
		case looks <- struct{}{}:
		default:
		}
		return int(backlog.Load())
	}
	b.fair.readOne(time.Now())

	stop, watcherEnded := make(chan struct{}), make(chan struct{})
	done := make(chan struct{})
	go func() { defer close(done); b.work(context.Background(), newNames(), stop, watcherEnded) }()
	defer func() {
		close(stop)
		<-done
	}()

	deadline := time.After(10 * time.Second)
	select {
	case <-legitRan:
	case <-deadline:
		t.Fatal("the other requester's job was not done while the watcher had names")
	}
	// Several looks at a backlog, each after the worker waited for it
	// (readerWait): no flood job in between.
	for range 5 {
		select {
		case <-looks:
		case <-deadline:
			t.Fatal("the worker stopped looking at the watcher's backlog")
		}
	}
	if n := floodRan.Load(); n != 0 {
		t.Fatalf("%d flood jobs done while the watcher had names for the reading, want 0", n)
	}
	backlog.Store(0)
	select {
	case <-allRan:
	case <-deadline:
		t.Fatalf("%d of %d flood jobs done once the watcher had nothing left", floodRan.Load(), flood)
	}
}
