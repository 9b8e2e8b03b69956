package serve

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/seed6639df8c/courier/decision"
	"github.com/seed6639df8c/courier/grants"
	"github.com/seed6639df8c/courier/internal/agingbloom"
	"github.com/seed6639df8c/courier/mailbox"
	"github.com/seed6639df8c/courier/reviewlog"
	"github.com/seed6639df8c/courier/rules"
	"github.com/seed6639df8c/courier/wire"
)

// The broker's work is in five files: this one (the Broker, Run and its
// tick), sweep.go (requests in flight, the sweep and housekeeping),
// handle.go (one request, from its file to an outcome), escalate.go (the
// chain, the terminal, held asks) and answer.go (the response and the
// whole-session grant).

// DisplayValueOrigin prefixes the origin of a rule decision reached by
// matching a pi 20.x request's display value (LegacyBashDisplayMatch),
// e.g. "display_value/global".
const DisplayValueOrigin = "display_value"

// ReasonSessionEnded answers the requests still pending when the broker
// stops (pi's sentence for asks released at session shutdown).
const ReasonSessionEnded = "The session ended before this permission request was answered"

// Defaults of the Broker's knobs.
const (
	// DefaultSweepInterval is how often in-flight requests are checked for
	// a requester that gave up or died; housekeeping runs every
	// housekeepingEvery sweeps.
	DefaultSweepInterval = time.Second
	// DefaultWorkers read and resolve requests in parallel; asks that wait
	// for the chain or the terminal leave their worker at once.
	DefaultWorkers = 4
	// tempMaxAge is when a staged temp file is surely abandoned.
	tempMaxAge = 10 * time.Minute
	// housekeepingEvery runs the slower sweeps every this many sweeps.
	housekeepingEvery = 10
)

// What ended a request's work, as its context's cause reports it.
var (
	errSessionEnded  = errors.New("the session ended")
	errRequesterGone = errors.New("the requester gave up")
	errPromptTimeout = errors.New("prompt timeout")
	// errForwardingTimeout: the request is older than the forwarding
	// timeout, held at the terminal or not.
	errForwardingTimeout = errors.New("past the forwarding timeout")
)

// Broker serves one session's inbox. Set the fields, then call Run once.
type Broker struct {
	// Layout is the mailbox.
	Layout mailbox.Layout
	// Session is the serving session id.
	Session string
	// Policy is the recorded authority. Its session rules receive the
	// whole-session grants.
	Policy *rules.Policy
	// Chain runs between the rules and the terminal; nil means no links.
	// Without a chain, and with a Terminal that is a Holder, an ask is
	// handed to the terminal in the job that read it (escalatesInline).
	Chain Chain
	// Terminal decides what nothing else did; nil means Headless.
	Terminal Terminal
	// Log receives the review entries; nil logs nothing.
	Log *reviewlog.Log
	// Journal persists whole-session grants; nil keeps them in memory.
	Journal *grants.Journal
	// Watch configures how the inbox is watched.
	Watch mailbox.WatchOptions
	// ForwardingTimeout is how old a request may be before it is swept
	// unanswered (its child gave up long ago); 0 means pi's 600 s.
	ForwardingTimeout time.Duration
	// PromptTimeout bounds how long the terminal may take; 0 is no limit.
	PromptTimeout time.Duration
	// LegacyBashDisplayMatch resolves a bash request without access facts
	// (a pi 20.x child's) by its display value, as a 20.x parent does; see
	// rules.Config.LegacyBashDisplayMatch.
	LegacyBashDisplayMatch bool
	// SweepInterval, Workers: 0 means the defaults.
	SweepInterval time.Duration
	Workers       int
	// MaxPendingPerRequester and MaxPending bound the asks waiting for the
	// chain or the terminal (admitted and not yet answered) from one
	// requesting session and from all: an ask past either is answered
	// "unavailable" at once, saying which bound. 0 means the defaults
	// (DefaultMaxPendingPerRequester, DefaultMaxPending); negative, none.
	MaxPendingPerRequester, MaxPending int
	// OnError hears of problems worth an operator's eye (stderr); nil
	// discards them. They are in the review log too.
	OnError func(error)
	// OnNotice hears, as one line, of what the operator should know
	// about how asks are resolved, though nothing failed: that the rules
	// were not consulted for a request without access facts (a pi 20.x
	// child's), said once per run (noticeNoFacts). nil discards it; it
	// is in the review log too.
	OnNotice func(string)
	// Now is the clock; nil means time.Now.
	Now func() time.Time

	mu       sync.Mutex
	inflight map[string]*pending  // by request id
	answered map[string]time.Time // ids answered this run, for re-deliveries
	// answeredOrder is answered in the order written, so housekeeping
	// forgets the old ones without walking tens of thousands of recent
	// ones every ten seconds of an idle broker's life.
	answeredOrder []answeredAt
	unwritten     map[string]unwrittenAnswer // decided, but the response write failed
	// answeredDigest is, for each id in answered, the request bytes it
	// was answered for (digestKey): a request reusing the id is refused.
	answeredDigest map[string]uint64
	// forgotten holds the ids forgotten before the forwarding timeout
	// (maxAnswered), for the window in which their answers may still be
	// on disk (forgetWindow): only a request under one of them is looked
	// for there. Set by prepare.
	forgotten *agingbloom.Filter
	// respondedAtStart is the ids of the response files there when
	// serving started, nil if unknown (responsesAtStart). Written before
	// the workers start, then only read.
	respondedAtStart map[string]struct{}
	// fair holds the work left on each request after it was read, in
	// turn across requesters (fair.go).
	fair *fairQueue
	// aheadBytes, aheadJobs and aheadAgain, when positive, replace the
	// bounds on reading a flood ahead (maxAheadBytes, maxQueuedJobs,
	// maxAgainLater): a test
	// reaches them with a few hundred files, not tens of thousands.
	aheadBytes, aheadJobs, aheadAgain int
	// answeredMax bounds the answered ids remembered: maxAnswered, less
	// in tests that pass it.
	answeredMax int
	// registered numbers the in-flight registrations and sweeps the
	// sweeps, so that a sweep judges only what was registered before it
	// listed the inbox.
	registered, sweeps uint64
	// escalated counts the asks that left their worker and are not yet
	// concluded (deciding, or held by the terminal).
	escalated sync.WaitGroup
	watcher   *mailbox.Watcher
	// listInbox, when set, replaces the watcher's listing for the sweep:
	// a test counts the listings.
	listInbox func() ([]string, error)
	// watcherBacklog, when set, replaces the watcher's Backlog for the
	// workers: a test holds names back.
	watcherBacklog func() int
	// paceFloods says a flood's jobs are paced (restAfter): set by Run
	// when another worker reads meanwhile.
	paceFloods bool
	// floodPace is the flood's work since its last rest (restAfter).
	floodPace floodPace
	// floodRest, when set, replaces the wait of a rest: a test looks at
	// the queue during the rest.
	floodRest func(stop <-chan struct{}, rest time.Duration) bool
	// noFactsNoticed: OnNotice has heard of a request without access
	// facts, [1] of a bash one, [0] of any other.
	noFactsNoticed [2]atomic.Bool
	// users names the requesters' uids for the terminal.
	users userNames
	// beforeAgain, when set, runs when a file that waited by name has its
	// turn, before it is read again: a test changes the file meanwhile.
	beforeAgain func()
	// afterDeadRemoved, when set, runs when the sweep has removed the
	// files of requesters it found dead, before it ends their asks: a
	// test answers one meanwhile.
	afterDeadRemoved func()
	// beforeResponse, when set, runs just before a response is written:
	// a test checks what must be in place by then (the vouched grants).
	beforeResponse func(req *wire.Request, d decision.Decision)
}

func (b *Broker) now() time.Time {
	if b.Now != nil {
		return b.Now()
	}
	return time.Now()
}

func (b *Broker) report(err error) {
	if err != nil && b.OnError != nil {
		b.OnError(err)
	}
}

func (b *Broker) log(e reviewlog.Entry) {
	if err := b.Log.Emit(e); err != nil {
		b.report(err)
	}
}

// sweepInterval is SweepInterval, or its default.
func (b *Broker) sweepInterval() time.Duration {
	if b.SweepInterval <= 0 {
		return DefaultSweepInterval
	}
	return b.SweepInterval
}

func (b *Broker) forwardingTimeout() time.Duration {
	if b.ForwardingTimeout > 0 {
		return b.ForwardingTimeout
	}
	return rules.DefaultForwardingTimeout
}

// reasonNoAnswer is pi's reason for a forwarding timeout, which a child
// gives when its parent did not answer in time: the answer to an ask that
// was still waiting here then.
func (b *Broker) reasonNoAnswer() string {
	secs := strconv.FormatFloat(float64(b.forwardingTimeout().Milliseconds())/1000, 'f', -1, 64)
	return fmt.Sprintf("Session '%s' did not answer within %ss", b.Session, secs)
}

func (b *Broker) maxPendingPerRequester() int {
	if b.MaxPendingPerRequester == 0 {
		return DefaultMaxPendingPerRequester
	}
	return b.MaxPendingPerRequester
}

func (b *Broker) maxPending() int {
	if b.MaxPending == 0 {
		return DefaultMaxPending
	}
	return b.MaxPending
}

// prepare makes the broker's state, as Run does before serving.
func (b *Broker) prepare() {
	b.inflight = make(map[string]*pending)
	b.answered = make(map[string]time.Time)
	b.answeredDigest = make(map[string]uint64)
	b.unwritten = make(map[string]unwrittenAnswer)
	b.fair = newFairQueue()
	if b.aheadBytes > 0 {
		b.fair.aheadMax = b.aheadBytes
	}
	if b.aheadJobs > 0 {
		b.fair.jobsMax = b.aheadJobs
	}
	if b.aheadAgain > 0 {
		b.fair.againMax = b.aheadAgain
	}
	if b.answeredMax <= 0 {
		b.answeredMax = maxAnswered
	}
	b.forgotten = agingbloom.New(forgottenBits, b.forgetWindow())
}

// Run serves until ctx ends, then answers what is still pending, withdraws
// the heartbeat and returns. It returns an error only if serving could not
// start.
func (b *Broker) Run(ctx context.Context) error {
	session, err := mailbox.NormalizeSessionID(b.Session)
	if err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	b.Session = session
	if b.Policy == nil {
		return errors.New("serve: no policy")
	}
	if b.Terminal == nil {
		b.Terminal = Headless{}
	}
	requests, err := b.Layout.RequestsDir(session)
	if err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	// pi's server never creates an inbox; courier does, so that its watch
	// is armed before the first child arrives instead of polling for it.
	if err := b.Layout.EnsureInbox(session); err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	if n, err := b.Layout.SweepServing(); err != nil {
		b.report(fmt.Errorf("sweeping dead heartbeats: %w", err))
	} else if n > 0 {
		b.log(reviewlog.ForwardingWarningEntry{Message: fmt.Sprintf("removed %d heartbeat records of dead serving sessions", n)})
	}
	b.prepare()
	b.respondedAtStart = b.responsesAtStart()

	// Every response is bound to its request (finish); say so, so that a
	// courier child refuses an unbound answer planted in our name.
	heartbeat := &mailbox.HeartbeatPublisher{Layout: b.Layout, Session: session, Now: b.Now, ResponseBinding: wire.BindingSHA256}
	publish := func() {
		if err := heartbeat.Publish(); err != nil {
			b.report(fmt.Errorf("heartbeat: %w", err))
		}
	}
	publish()
	b.log(reviewlog.ForwardedServingStartedEntry{SessionID: session})

	// The watcher and the heartbeat outlive ctx until every pending
	// request has its answer: children keep waiting while we shut down.
	background, stopBackground := context.WithCancel(context.Background())
	watcherDone := make(chan struct{})
	b.watcher = mailbox.NewWatcher(requests, b.watchOptions())
	go func() { defer close(watcherDone); b.watcher.Run(background) }()

	handling, endHandling := context.WithCancelCause(context.Background())
	defer endHandling(nil) // shutdown ends it first, with errSessionEnded
	workers := b.Workers
	if workers <= 0 {
		workers = DefaultWorkers
	}
	// With one worker, a rest would stop the reading too.
	b.paceFloods = workers > 1
	stopWorkers := make(chan struct{})
	var workersDone sync.WaitGroup
	waiting, watcherEnded := newNames(), make(chan struct{})
	workersDone.Go(func() { b.takeAhead(waiting, stopWorkers, watcherEnded) })
	for range workers {
		workersDone.Go(func() { b.work(handling, waiting, stopWorkers, watcherEnded) })
	}

	// One timer for the heartbeat, the sweeps and housekeeping: an idle
	// broker wakes once per tick, not once for each.
	beat := newBeat(time.Now(), b.sweepInterval(), mailbox.HeartbeatInterval)
	ticker := time.NewTicker(beat.tick)
	defer ticker.Stop()
	stopping, stopped := ctx.Done(), chan struct{}(nil)
	for sweeps := 0; ; {
		select {
		case <-stopping:
			// Shut down beside this loop, which keeps the heartbeat
			// fresh until every pending request has its answer.
			stopping, stopped = nil, make(chan struct{})
			go func() {
				defer close(stopped)
				b.shutdown(endHandling, stopWorkers, &workersDone, requests)
			}()
		case <-stopped:
			ticker.Stop()
			stopBackground()
			<-watcherDone
			if err := heartbeat.Withdraw(); err != nil {
				b.report(fmt.Errorf("withdrawing the heartbeat: %w", err))
			}
			b.log(reviewlog.ForwardedServingStoppedEntry{SessionID: session})
			return nil
		case now := <-ticker.C:
			heartbeat, sweep := beat.due(now)
			if heartbeat {
				publish()
			}
			if sweep && stopped == nil {
				sweeps++
				// The safety rescan lists the whole inbox on the
				// watcher's goroutine, which handles no event meanwhile:
				// while names are being delivered (the watch works) it
				// runs with housekeeping only, so that a flood's backlog
				// is not listed every second in front of a legitimate
				// request's event (0014).
				if !waiting.delivered.Swap(false) || sweeps%housekeepingEvery == 0 {
					b.watcher.Rescan()
				}
				b.sweepInflight()
				b.reloadJournal()
				if sweeps%housekeepingEvery == 0 {
					b.housekeeping()
				}
			}
		}
	}
}

// work is one worker: it reads the requests the watcher delivered
// (read) and does the jobs they leave, in turn across requesters, until
// stop is closed or the watcher ends. Reading comes first while names are
// waiting, up to intakeBurst of them between two jobs: a flood's files
// are read as fast as they come, so that a legitimate request is in its
// requester's queue, and taken in its turn, soon after it arrives. While
// a flood crowds the queue (0020), the jobs of the requesters that are
// not flooding come before any reading, and the flood's after all of it.
//
// The names come through waiting (takeAhead), not from the watcher's
// channel: a worker that finished a small file would often find the
// watcher not yet ready to hand it the next one (a wake-up costs more
// than reading a small file) and do a job instead, and a flood's jobs
// would run before the files behind them were even read.
func (b *Broker) work(ctx context.Context, waiting *names, stop, watcherEnded <-chan struct{}) {
	take := func(name string) {
		b.fair.readOne(time.Now())
		o, key, j := b.read(ctx, name)
		if j != nil && !b.fair.pushRead(key, j) {
			j()
		}
		b.release(name, o)
	}
	do := func(j job) {
		j()
		b.fair.done()
	}
	gate := time.NewTimer(time.Hour)
	gate.Stop()
	defer gate.Stop()
	for reads := 0; ; {
		select {
		case <-stop:
			return
		default:
		}
		if j, ok := b.fair.takeLight(); ok {
			do(j)
			continue
		}
		readAll := b.fair.readAll()
		if reads < intakeBurst || readAll {
			if name, ok := waiting.pop(); ok {
				take(name)
				reads++
				continue
			}
		}
		if readAll && b.inboxBacklog() > 0 {
			// The watcher has names for the reading: the flood's job
			// waits for them (see readerFirst).
			if !readerFirst(stop, watcherEnded, waiting.wake, gate) {
				return
			}
			continue
		}
		if j, ok := b.fair.take(); ok {
			reads = 0
			if !readAll {
				do(j)
				continue
			}
			// One of a flood's jobs, then a yield or, once the flood's
			// jobs have had their share, a rest (restAfter): the watcher
			// and the takeAhead goroutine, which feed the reading, and
			// the other requesters' jobs run before the flood's next. The
			// job counts as running until the rest is over, so that no
			// other worker takes the next (take).
			start := time.Now()
			j()
			rested := b.restAfter(stop, gate, time.Since(start))
			b.fair.done()
			if !rested {
				return
			}
			continue
		}
		reads = 0
		select {
		case <-stop:
			return
		case <-watcherEnded:
			return
		case <-waiting.wake:
		case <-b.fair.kick:
		}
	}
}

// beat is the serve loop's one timer, for the heartbeat and the sweeps: it
// ticks at the shorter of their intervals, and each is due on the first
// tick that is about its interval after its last run. Elapsed time, not a
// count of ticks, decides: a ticker drops the ticks of a busy loop.
type beat struct {
	tick                       time.Duration
	heartbeatEvery, sweepEvery time.Duration
	lastHeartbeat, lastSweep   time.Time
}

func newBeat(now time.Time, sweep, heartbeat time.Duration) *beat {
	return &beat{tick: min(sweep, heartbeat), heartbeatEvery: heartbeat, sweepEvery: sweep, lastHeartbeat: now, lastSweep: now}
}

// due reports what is due at now, and counts it as run. Half a tick of
// slack: a tick that comes a little early still counts.
func (t *beat) due(now time.Time) (heartbeat, sweep bool) {
	slack := t.tick / 2
	if now.Sub(t.lastHeartbeat) >= t.heartbeatEvery-slack {
		heartbeat, t.lastHeartbeat = true, now
	}
	if now.Sub(t.lastSweep) >= t.sweepEvery-slack {
		sweep, t.lastSweep = true, now
	}
	return heartbeat, sweep
}

// shutdown answers everything still pending with ReasonSessionEnded.
func (b *Broker) shutdown(endHandling context.CancelCauseFunc, stopWorkers chan struct{}, workers *sync.WaitGroup, requests string) {
	close(stopWorkers)
	workers.Wait()
	endHandling(errSessionEnded)
	// The asks a terminal holds hear it too (an ask handed over after
	// this finds its context ended: see hold).
	b.mu.Lock()
	var withdraw []func()
	for _, p := range b.inflight {
		withdraw = p.end(errSessionEnded, withdraw)
	}
	b.mu.Unlock()
	for _, w := range withdraw {
		w()
	}
	// The workers have stopped: what is queued, and the conclusions of
	// the asks withdrawn, are answered here.
	b.drain()
	// What is left on disk was never picked up: answer it too.
	entries, err := os.ReadDir(requests)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		b.report(fmt.Errorf("listing the inbox at shutdown: %w", err))
	}
	ended, cancel := context.WithCancelCause(context.Background())
	cancel(errSessionEnded)
	for _, e := range entries {
		if name := e.Name(); mailbox.IsMailName(name) {
			b.release(name, b.handle(ended, name))
		}
	}
	b.drain()
}

// runQueued does the queued jobs, one after another, until none is left.
func (b *Broker) runQueued() {
	for j, ok := b.fair.take(); ok; j, ok = b.fair.take() {
		j()
		b.fair.done()
	}
}

// drain does every queued job, and those that concluding escalations
// queue, until no escalation is left: once the workers have stopped.
func (b *Broker) drain() {
	concluded := make(chan struct{})
	go func() { b.escalated.Wait(); close(concluded) }()
	for {
		b.runQueued()
		select {
		case <-concluded:
			// Nothing is escalated any more, so nothing queues a job.
			b.runQueued()
			return
		case <-b.fair.kick:
		}
	}
}

// requestPath is the path of a request file named name.
func (b *Broker) requestPath(name string) string {
	return filepath.Join(b.watcher.Dir(), name)
}

// remove deletes a mailbox file; a file already gone is fine. It reports
// whether the file is gone.
func (b *Broker) remove(path string) bool {
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		b.report(fmt.Errorf("removing %s: %w", path, err))
		return false
	}
	return true
}

// parties is who asked whom, as every serving-side review entry about req
// records it.
func parties(req *wire.Request) reviewlog.Parties {
	return reviewlog.Parties{RequesterAgentName: req.RequesterAgentName, RequesterSessionID: req.RequesterSessionID, TargetSessionID: req.TargetSessionID}
}

// partiesOf is parties with the digest of the request's bytes, for the
// entries that record a decision: the census joins them by request id and
// digest, so that an id used again after a restart is another ask.
func partiesOf(req *wire.Request, digest string) reviewlog.Parties {
	p := parties(req)
	p.RequestSHA256 = digest
	return p
}
