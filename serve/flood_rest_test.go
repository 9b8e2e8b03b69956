package serve

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/seed6639df8c/courier/mailbox"
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

// jobTime is how long each of the tests' jobs takes, so that a flood's
// jobs reach floodBurst and rest.
const jobTime = 300 * time.Microsecond

// crowdedFor keeps the queue crowded while jobs wait, whatever the clock:
// a read "in the future" is always recent (crowdedRecently).
func crowdedFor(q *fairQueue) { q.readOne(time.Now().Add(time.Hour)) }

// While a flood crowds the queue, its jobs run back to back for
// floodBurst, then rest twice as long (0035), and no other worker takes
// the flood's next job meanwhile, so that the flood's jobs get at most
// about a third of a processor; another requester's job is done during
// the rest, and the flood's jobs all run in the end. Without the rest a
// flood's jobs were done back to back and filled the broker's share of
// the CPU.
func TestFloodJobsRestWhileAnotherRequesterIsServed(t *testing.T) {
	b := &Broker{paceFloods: true}
	b.prepare()
	const flood = 3 * crowdedJobs
	var floodRan atomic.Int64
	allRan := make(chan struct{})
	for range flood {
		b.fair.push("flooder", func() {
			time.Sleep(jobTime)
			if floodRan.Add(1) == flood {
				close(allRan)
			}
		})
	}
	crowdedFor(b.fair)

	legitRan := make(chan struct{})
	var rests atomic.Int64
	b.floodRest = func(stop <-chan struct{}, rest time.Duration) bool {
		if rest < 2*floodBurst {
			t.Errorf("a rest of %s, want twice the flood's burst (%s) at least", rest, floodBurst)
		}
		if rests.Add(1) > 1 {
			return true
		}
		before := floodRan.Load()
		b.fair.push("legit", func() { close(legitRan) })
		select {
		case <-legitRan:
		case <-stop:
			return false
		case <-time.After(10 * time.Second):
			t.Error("another requester's job was not done while the flood's jobs rested")
		}
		if n := floodRan.Load() - before; n != 0 {
			t.Errorf("%d of the flood's jobs were done during its rest, want none", n)
		}
		return true
	}
	startWorkers(t, b, 2)

	select {
	case <-allRan:
	case <-time.After(10 * time.Second):
		t.Fatalf("%d of the flood's %d jobs done", floodRan.Load(), flood)
	}
	// A rest after every floodBurst of the jobs taken while more than
	// crowdedJobs waited; none once the queue was not crowded.
	if n := rests.Load(); n == 0 || n >= flood {
		t.Errorf("%d rests after %d of the flood's jobs, want some, and fewer than one a job", n, flood)
	}
	select {
	case <-legitRan:
	default:
		t.Error("the other requester's job was never done")
	}
}

// Without a flood (nothing read lately, or no requester with many jobs
// waiting) jobs are done with no rest between them, and so are a flood's
// when one worker would have to rest from reading too.
func TestJobsDoNotRestWithoutAFlood(t *testing.T) {
	for _, tc := range []struct {
		name    string
		keys    func(i int) string
		read    time.Time
		workers int
	}{
		{"many jobs, nothing read lately", func(int) string { return "a" }, time.Now().Add(-time.Minute), 2},
		{"jobs of many requesters, reading under way", func(i int) string { return string(rune('a' + i%26)) }, time.Now().Add(time.Hour), 2},
		{"a flood, one worker", func(int) string { return "a" }, time.Now().Add(time.Hour), 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := &Broker{paceFloods: tc.workers > 1}
			b.prepare()
			const n = 3 * crowdedJobs
			var ran atomic.Int64
			allRan := make(chan struct{})
			for i := range n {
				b.fair.push(tc.keys(i), func() {
					time.Sleep(jobTime)
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
			startWorkers(t, b, tc.workers)
			select {
			case <-allRan:
			case <-time.After(10 * time.Second):
				t.Fatalf("%d of %d jobs done", ran.Load(), n)
			}
			if r := rests.Load(); r != 0 {
				t.Errorf("%d rests, want none", r)
			}
		})
	}
}

// The flood's jobs rest once they have taken floodBurst since the last
// rest, twice as long as they took; a clock that went back counts as
// nothing.
func TestFloodPace(t *testing.T) {
	var p floodPace
	for i, tc := range []struct {
		took, rest time.Duration
	}{
		{floodBurst * 3 / 10, 0},
		{-time.Second, 0},
		{floodBurst * 3 / 10, 0},
		{floodBurst * 3 / 10, 0},
		{floodBurst * 2 / 10, 2 * floodBurst * 11 / 10},
		{floodBurst * 9 / 10, 0},
		{5 * floodBurst, 2 * floodBurst * 59 / 10},
	} {
		if got := p.after(tc.took); got != tc.rest {
			t.Errorf("job %d took %s: rest %s, want %s", i, tc.took, got, tc.rest)
		}
	}
}

// restAfter rests what floodPace says only when the broker paces floods,
// and a worker told to stop does not rest at all.
func TestRestAfter(t *testing.T) {
	gate := time.NewTimer(time.Hour)
	gate.Stop()
	var asked []time.Duration
	b := &Broker{paceFloods: true, floodRest: func(_ <-chan struct{}, rest time.Duration) bool {
		asked = append(asked, rest)
		return true
	}}
	running := make(chan struct{})
	if !b.restAfter(running, gate, floodBurst/2) || len(asked) != 0 {
		t.Fatalf("a rest after half a burst: %v", asked)
	}
	if !b.restAfter(running, gate, floodBurst/2) || len(asked) != 1 || asked[0] != 2*floodBurst {
		t.Fatalf("rests %v after a whole burst, want [%s]", asked, 2*floodBurst)
	}
	stopped := make(chan struct{})
	close(stopped)
	if b.restAfter(stopped, gate, 10*floodBurst) || len(asked) != 1 {
		t.Errorf("a worker told to stop rested (%v) or was not told to stop", asked)
	}
	b.paceFloods = false
	if !b.restAfter(running, gate, 10*floodBurst) || len(asked) != 1 {
		t.Errorf("a rest without pacing: %v", asked)
	}
	// The wait itself: a rest ends at its time, or at once when the
	// worker is told to stop.
	b = &Broker{paceFloods: true}
	b.floodPace.spent = floodBurst
	if !b.restAfter(running, gate, 0) {
		t.Error("a rest reported a stop")
	}
	b.floodPace.spent = time.Hour
	stop := make(chan struct{})
	go close(stop)
	if b.restAfter(stop, gate, 0) {
		t.Error("a rest of two hours did not end at the stop")
	}
}

// Run paces a flood's jobs when it has more than one worker.
func TestRunPacesFloodsWithMoreThanOneWorker(t *testing.T) {
	for _, workers := range []int{0, 1, 2} {
		f := newFixtureWith(t, mailbox.Layout{Root: t.TempDir()}, Headless{}, func(b *Broker) { b.Workers = workers })
		f.stop()
		if want := workers != 1; f.broker.paceFloods != want {
			t.Errorf("Workers %d: paceFloods %t, want %t", workers, f.broker.paceFloods, want)
		}
	}
}
