package serve

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/seed6639df8c/courier/wire"
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

// read reads one request file the watcher delivered, in arrival order,
// and returns what intake returns. A file of a requester that is flooding
// (fairQueue.readAhead: its requester id is peeked, not decoded) is only
// read: the rest of its intake is a job in that requester's turn, with
// the bytes read (0020). Reading then keeps up with a flood that deciding
// and answering cannot, and a legitimate request behind the flood's files
// is read, decided and answered while the flood's wait.
func (b *Broker) read(ctx context.Context, name string) (outcome, string, job) {
	id, data, f, o := b.readRequest(name)
	if data == nil {
		return o, "", nil
	}
	if key, ok := wire.PeekRequester(data); ok && key != "" {
		key = f.scope(key)
		if b.fair.readAhead(key, keptBytes(data)) {
			return queued, key, b.intakeLater(ctx, name, id, data, f)
		}
		if b.fair.readAgainLater(key) {
			releaseRead(data)
			b.fair.push(key, b.intakeAgain(ctx, name))
			return queued, "", nil
		}
	}
	return b.intakeRead(ctx, name, id, data, f)
}

// intakeAgain is the job of a file of a flooding requester read past the
// bounds on what is kept ahead (readAgainLater): only its name waited,
// and in the requester's turn the file is read again and taken in as
// read would have (0036). What is there then is what is decided: the
// file may be gone (its child gave up) or another since.
func (b *Broker) intakeAgain(ctx context.Context, name string) job {
	return func() {
		defer b.fair.againDone()
		if b.beforeAgain != nil {
			b.beforeAgain()
		}
		id, data, f, o := b.readRequest(name)
		if data == nil {
			b.release(name, o)
			return
		}
		o, _, j := b.intakeRead(ctx, name, id, data, f) // data is consumed
		if j == nil {
			b.release(name, o)
			return
		}
		j()
	}
}

// intakeLater is the job of a file read ahead: intake in the requester's
// turn, and at once what intake leaves (answering, refusing, escalating),
// since the turn is already taken. ctx is the workers', as intake would
// have had it: a turn that comes at shutdown answers "the session ended".
// The key the turn was taken under is the one peeked; the request decoded
// may claim another (only a writer that is that requester can make them
// differ), whose bound its ask then counts in.
func (b *Broker) intakeLater(ctx context.Context, name, id string, data []byte, f from) job {
	return func() {
		n := keptBytes(data)
		o, _, j := b.intakeRead(ctx, name, id, data, f) // data is consumed
		b.fair.aheadDone(n)
		if j == nil {
			b.release(name, o)
			return
		}
		j()
	}
}

// readerWait bounds how long a worker leaves the flood's jobs to the
// inbox watcher (readerFirst) before it looks again: the watcher's backlog
// is counted at its turns, and it may pass without a name for the workers
// (names dropped before they were handed out).
const readerWait = time.Millisecond

// readerFirst waits, while a flood crowds the queue and the inbox watcher
// still has names for the reading (fairQueue.readAll, Watcher.Backlog),
// for a name to read, at most readerWait; it reports false when the
// worker is to stop. A flood's job is done only once nothing is left to
// read (0020); names the watcher has not handed out yet are left too.
// Without this a worker did the flood's jobs (some 50 µs of CPU each:
// the decode, the response, the removal) whenever the workers had read
// what was handed out, and the watcher's turns, which every later name
// waits for, competed with them for the processors: under a writer with
// a core of its own a legitimate request's p99 was tens of ms, nearly all
// of it between its file's arrival and its name's hand-out.
func readerFirst(stop, watcherEnded <-chan struct{}, wake <-chan struct{}, gate *time.Timer) bool {
	gate.Reset(readerWait)
	defer gate.Stop()
	select {
	case <-stop:
		return false
	case <-watcherEnded:
		return false
	case <-wake:
	case <-gate.C:
	}
	return true
}

// inboxBacklog is the names the inbox watcher has for the reading
// (Watcher.Backlog).
func (b *Broker) inboxBacklog() int {
	if b.watcherBacklog != nil {
		return b.watcherBacklog()
	}
	return b.watcher.Backlog()
}

// floodBurst is how long a flood's jobs run back to back before a rest
// (floodPace). Under contention one job often takes this long by the
// wall clock (its thread preempted), and then each job rests.
const floodBurst = 250 * time.Microsecond

// floodPace keeps a flood's jobs, while the flood crowds the queue and
// reading keeps up with it (fairQueue.readAll), to about a third of a
// processor: once they have taken floodBurst since the last rest, the
// worker rests twice as long (docs/decisions/0035-a-floods-jobs-rest.md).
// Not a rest after every job: the runtime sleeps in whole milliseconds
// when nothing else is runnable, so a rest of tens of µs after each job
// lasted a millisecond or more, and a flood the broker could have kept
// up with was answered at a few hundred jobs a second.
type floodPace struct {
	mu    sync.Mutex
	spent time.Duration
}

// after counts a flood's job that took took, and returns the rest due
// now: none until the jobs since the last rest have taken floodBurst,
// then twice what they took.
func (p *floodPace) after(took time.Duration) time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.spent += max(took, 0)
	if p.spent < floodBurst {
		return 0
	}
	rest := 2 * p.spent
	p.spent = 0
	return rest
}

// restAfter follows one of a flood's jobs that took took: a yield, so
// that the goroutines that feed the reading run before the flood's next
// job (one that never blocks keeps its processor for 10 ms), or the rest
// floodPace says is due, during which no other worker takes a flood's
// job. It reports false when the worker is to stop. With one worker
// (paceFloods false) there is never a rest: it would stop the reading
// too. Reading and the jobs of the other requesters (takeLight) go on in
// the other workers meanwhile. Without rests the flood's jobs were done
// back to back whenever nothing was left to read, and filled the
// broker's share of the CPU when the flood's writer had a core of its
// own.
func (b *Broker) restAfter(stop <-chan struct{}, gate *time.Timer, took time.Duration) bool {
	rest := time.Duration(0)
	if b.paceFloods {
		rest = b.floodPace.after(took)
	}
	select {
	case <-stop:
		return false
	default:
	}
	if rest <= 0 {
		runtime.Gosched()
		return true
	}
	if b.floodRest != nil {
		return b.floodRest(stop, rest)
	}
	gate.Reset(rest)
	defer gate.Stop()
	select {
	case <-stop:
		return false
	case <-gate.C:
	}
	return true
}
