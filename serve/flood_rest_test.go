package serve

import (
	"context"
	"sync/atomic"
	"testing"
	"time"
)

// startWorkers runs n workers of b on a queue of its own, with nothing
// left for them to read, until the test ends.
func startWorkers(t *testing.T, b *Broker, n int) {
	t.Helper()
	b.watcherBacklog = func() int { return 0 }
	stop, watcherEnded := make(chan struct{}), make(chan struct{})
	done := make(chan struct{}, n)
	for range n {
		go func() {
			defer func() { done <- struct{}{} }()
			b.work(context.Background(), newNames(), stop, watcherEnded)
		}()
	}
	t.Cleanup(func() {
		close(stop)
		for range n {
			<-done
		}
	})
}

// While a flood crowds the queue, each of its jobs is followed by a rest
// (0035), and no other worker takes the flood's next job meanwhile, so
// that the flood's jobs get at most about a third of a processor; another requester's job is done during the rest, and the
// flood's jobs all run in the end. Without the rest a flood's jobs were
// done back to back and filled the broker's share of the CPU.
func TestFloodJobsRestWhileAnotherRequesterIsServed(t *testing.T) {
	b := &Broker{}
	b.prepare()
	const flood = 3 * crowdedJobs
	var floodRan atomic.Int64
	allRan := make(chan struct{})
	for range flood {
		b.fair.push("flooder", func() {
			// The flood's writer is still at it: its files are read.
			b.fair.readOne(time.Now())
			if floodRan.Add(1) == flood {
				close(allRan)
			}
		})
	}
	b.fair.readOne(time.Now())

	legitRan := make(chan struct{})
	var rests atomic.Int64
	b.floodRest = func(stop <-chan struct{}, took time.Duration) bool {
		if rests.Add(1) > 1 {
			return true
		}
		if took <= 0 {
			t.Errorf("a rest after a job that took %s", took)
		}
		before := floodRan.Load()
		b.fair.push("legit", func() { close(legitRan) })
		select {
		case <-legitRan:
		case <-stop:
			return false
		case <-time.After(10 * time.Second):
			t.Error("another requester's job was not done while the flood's job rested")
		}
		if n := floodRan.Load() - before; n != 0 {
			t.Errorf("%d of the flood's jobs were done during the rest after one, want none", n)
		}
		return true
	}
	startWorkers(t, b, 2)

	select {
	case <-allRan:
	case <-time.After(10 * time.Second):
		t.Fatalf("%d of the flood's %d jobs done", floodRan.Load(), flood)
	}
	// Every job taken while more than crowdedJobs waited rested; the
	// last ones, once the queue is not crowded, did not.
	if n := rests.Load(); n == 0 || n >= flood {
		t.Errorf("%d rests after %d of the flood's jobs, want some, and none once the queue was not crowded", n, flood)
	}
	select {
	case <-legitRan:
	default:
		t.Error("the other requester's job was never done")
	}
}

// Without a flood (nothing read lately, or no requester with many jobs
// waiting) jobs are done with no rest between them.
func TestJobsDoNotRestWithoutAFlood(t *testing.T) {
	for _, tc := range []struct {
		name string
		keys func(i int) string
		read time.Time
	}{
		{"many jobs, nothing read lately", func(int) string { return "a" }, time.Now().Add(-time.Minute)},
		{"jobs of many requesters, reading under way", func(i int) string { return string(rune('a' + i%26)) }, time.Now().Add(time.Minute)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := &Broker{}
			b.prepare()
			const n = 3 * crowdedJobs
			var ran atomic.Int64
			allRan := make(chan struct{})
			for i := range n {
				b.fair.push(tc.keys(i), func() {
					if ran.Add(1) == n {
						close(allRan)
					}
				})
			}
			b.fair.readOne(tc.read)
			var rests atomic.Int64
			b.floodRest = func(<-chan struct{}, time.Duration) bool {
				rests.Add(1)
				return true
			}
			startWorkers(t, b, 2)
			select {
			case <-allRan:
			case <-time.After(10 * time.Second):
				t.Fatalf("%d of %d jobs done", ran.Load(), n)
			}
			if r := rests.Load(); r != 0 {
				t.Errorf("%d rests without a flood, want none", r)
			}
		})
	}
}
