package serve

import (
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/seed6639df8c/courier/wire"
)

// What a request costs after its file is read (writing the response,
// removing the request, the review entries, escalating an ask) is
// scheduled here, in turn across requesters, so that a flood from one
// subagent never starves another (docs/decisions/0014-fair-share-and-bounds.md).
// Reading and deciding by the rules stay first come, first served: they
// are cheap and keep up with a flood.

// Defaults of the Broker's bounds on asks waiting.
const (
	// DefaultMaxPendingPerRequester is how many asks of one requesting
	// session may wait for the chain or the terminal at once.
	DefaultMaxPendingPerRequester = 64
	// DefaultMaxPending is the same bound over every requester.
	DefaultMaxPending = 1024
)

// intakeBurst is how many request files a worker reads, while more are
// ready, before it does one job: reading keeps the requesters' queues
// filled, so that their turns are taken fairly, and a job still gets done
// however fast files arrive.
const intakeBurst = 64

// crowdedJobs and crowdedRecently say when the workers are behind a
// flood (fairQueue.crowded).
const (
	crowdedJobs     = 64
	crowdedRecently = 10 * time.Millisecond
)

// A requester with heavyJobs jobs or more waiting is flooding
// (docs/decisions/0020-flood-intake.md): the files it writes next are read
// ahead of deciding them (only its requester id is peeked; the rest of
// intake is done in its turn), and while the queue is crowded its jobs
// wait until nothing is left to read, while the jobs of the others
// (light) are done before any more reading. Ahead-read files keep their
// bytes until their turn, at most maxAheadBytes in all, of which files of
// largeRead bytes or more at most maxAheadLarge, and no file is read
// ahead while maxQueuedJobs wait (the files waiting by name, below, not
// counted): past that, reading and jobs take turns as without a flood
// (readAll), and a file read is answered by its reader at once, never
// queued (pushRead).
//
// maxAheadLarge is small: a flood of small files is what reading ahead
// keeps up with (its bytes are about what its jobs cost anyway), while
// every megabyte kept is live heap, which the collector's pacing doubles
// before it collects: 32 files of a megabyte read ahead were half the
// heap's peak with 3,000 such asks held (0014's second amendment).
//
// Past the bounds on bytes a flooding requester's files, large ones
// included, still wait for its turn, by name only, at most maxAgainLater
// of them (readAgainLater): each is read again in its turn (an ask a
// third time, for the chain or the terminal: reread). Reading then keeps
// up with a flood far longer than what it read could be kept, and a
// legitimate request behind a backlog of hundreds of thousands is read,
// and answered, before them (0036).
const (
	heavyJobs     = 16
	maxAheadBytes = 32 << 20
	maxAheadLarge = 4 << 20
	maxQueuedJobs = 1 << 16
	maxAgainLater = 1 << 18
)

// lightScan is how many requesters, from the one whose turn it is,
// takeLight looks at for one that is not flooding.
const lightScan = 64

// job is the work left on one request once its file is read: answering
// it, escalating it, or concluding its escalation. A job releases its
// request file to the watcher when it is done.
type job func()

// fairQueue holds the jobs of each requester in arrival order and hands
// them out in turn across requesters; it also counts the asks each
// requester has waiting, for the bounds.
type fairQueue struct {
	mu    sync.Mutex
	byKey map[string]*requester
	// turn is the requesters that have jobs, in the order of their
	// turns: take serves the first and puts it back last.
	turn []*requester
	// asks is the asks admitted and not yet concluded, in all.
	asks int
	// byUID counts the asks admitted and not yet concluded of each uid
	// in the isolation mode (keys scoped "uid:N/…"; see uidScope).
	byUID map[string]int
	// refusingAll says asks were refused for the bound in all since none
	// last waited, so that only the first refusal of a burst is reported.
	refusingAll bool
	// kick wakes one idle worker when a job is queued.
	kick chan struct{}
	// queued is the jobs waiting, running those being done, and read
	// when a request file was last read (crowded).
	queued, running int
	read            time.Time
	// peak is the most jobs that ever waited at once, not counting the
	// files waiting by name (the tests look).
	peak int
	// heavy is how many requesters have heavyJobs jobs or more waiting,
	// ahead the bytes kept by files read ahead of their turn, and
	// aheadLarge those of files of largeRead bytes or more.
	heavy, ahead, aheadLarge int
	// again is how many files wait by name, to be read again in their
	// turn: from readAgainLater until their job ends (againDone), so
	// while it runs too.
	again int
	// aheadMax, aheadLargeMax, jobsMax and againMax are the bounds on
	// reading ahead: maxAheadBytes, maxAheadLarge, maxQueuedJobs and
	// maxAgainLater, smaller in tests that reach them.
	aheadMax, aheadLargeMax, jobsMax, againMax int
}

// requester is one requesting session's place in the queue.
type requester struct {
	key  string
	jobs []job
	// asks is its asks admitted and not yet concluded.
	asks int
	// refusing says some of its asks were refused for its bound since it
	// last had none waiting.
	refusing bool
	// inTurn says it is in fairQueue.turn.
	inTurn bool
}

func newFairQueue() *fairQueue {
	return &fairQueue{byKey: make(map[string]*requester), kick: make(chan struct{}, 1), aheadMax: maxAheadBytes, aheadLargeMax: maxAheadLarge, jobsMax: maxQueuedJobs, againMax: maxAgainLater}
}

// requesterKey is whose turn a request's work takes: its requesting
// session, else its agent and process (a reader fills the session id, so
// the fallback is for requests built otherwise).
func requesterKey(req *wire.Request) string {
	if req.RequesterSessionID != "" {
		return req.RequesterSessionID
	}
	return "agent:" + req.RequesterAgentName + "/pid:" + strconv.Itoa(req.RequesterPID)
}

// get returns key's requester, made if need be. q.mu is held.
func (q *fairQueue) get(key string) *requester {
	r := q.byKey[key]
	if r == nil {
		r = &requester{key: key}
		q.byKey[key] = r
	}
	return r
}

// forget drops a requester that has nothing queued or waiting. q.mu is
// held.
func (q *fairQueue) forget(r *requester) {
	if len(r.jobs) == 0 && r.asks == 0 && !r.inTurn {
		delete(q.byKey, r.key)
	}
}

// push queues j as key's next job.
func (q *fairQueue) push(key string, j job) {
	q.mu.Lock()
	q.pushLocked(key, j)
	q.mu.Unlock()
	q.wake()
}

// pushRead queues j, the job of a request file just read, as key's next
// job, unless jobsMax jobs wait already, not counting the files waiting
// by name: then it reports false, and the reader does j at once. What
// waits stays bounded however long a flood lasts (0036): each job queued
// keeps a request's answer, up to a few KiB with the collector's slack,
// and a flood that outpaced the workers for 20 s had 200,000 of them and
// the broker half a gigabyte. A flooding requester's files past the
// bounds wait by name (readAgainLater), so what comes here past jobsMax
// is the others' (a flood that claims a new requester for every request)
// or a flood past maxAgainLater too.
func (q *fairQueue) pushRead(key string, j job) bool {
	q.mu.Lock()
	if q.jobsKept() >= q.jobsMax {
		q.mu.Unlock()
		return false
	}
	q.pushLocked(key, j)
	q.mu.Unlock()
	q.wake()
	return true
}

// pushLocked queues j as key's next job. q.mu is held.
func (q *fairQueue) pushLocked(key string, j job) {
	r := q.get(key)
	r.jobs = append(r.jobs, j)
	if len(r.jobs) == heavyJobs {
		q.heavy++
	}
	q.queued++
	q.peak = max(q.peak, q.jobsKept())
	if !r.inTurn {
		r.inTurn = true
		q.turn = append(q.turn, r)
	}
}

func (q *fairQueue) wake() {
	select {
	case q.kick <- struct{}{}:
	default:
	}
}

// take returns the next job: the oldest of the requester whose turn it
// is. It wakes another worker when jobs are left, unless the queue is
// crowded: then one job is done at a time, and take returns none while
// another is being done. The caller calls done when the job is.
func (q *fairQueue) take() (job, bool) {
	q.mu.Lock()
	if len(q.turn) == 0 {
		q.turn = nil // let a burst's backing array go
		q.mu.Unlock()
		return nil, false
	}
	crowded := q.crowded()
	if crowded && q.running > 0 {
		q.mu.Unlock()
		return nil, false
	}
	j := q.takeAt(0)
	more := len(q.turn) > 0 && !crowded
	q.mu.Unlock()
	if more {
		q.wake()
	}
	return j, true
}

// takeLight returns the next job of a requester that is not flooding,
// in turn, while another requester is: a worker does it before it reads
// more, so that a legitimate request read in the middle of a flood waits
// for no flood job at all (0020). It returns none when no requester is
// flooding, and then the worker reads and takes turns as take says.
func (q *fairQueue) takeLight() (job, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.heavy == 0 {
		return nil, false
	}
	for i, r := range q.turn[:min(len(q.turn), lightScan)] {
		if len(r.jobs) < heavyJobs {
			return q.takeAt(i), true
		}
	}
	return nil, false
}

// takeAt takes the oldest job of the i-th requester in turn, which then
// goes last, and counts it running. q.mu is held.
func (q *fairQueue) takeAt(i int) job {
	r := q.turn[i]
	// Those before it move up one: at most lightScan of them, however
	// many requesters wait.
	copy(q.turn[1:i+1], q.turn[:i])
	q.turn[0] = nil
	q.turn = q.turn[1:]
	j := r.jobs[0]
	r.jobs[0] = nil
	r.jobs = r.jobs[1:]
	if len(r.jobs) == heavyJobs-1 {
		q.heavy--
	}
	if len(r.jobs) > 0 {
		q.turn = append(q.turn, r)
	} else {
		r.jobs, r.inTurn = nil, false
		q.forget(r)
	}
	q.queued--
	q.running++
	return j
}

// done says a job taken is done.
func (q *fairQueue) done() {
	q.mu.Lock()
	q.running--
	q.mu.Unlock()
}

// jobsWaiting returns how many jobs wait (the sweep's hint of a crowded
// inbox: each waits on a file still there).
func (q *fairQueue) jobsWaiting() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.queued
}

// readOne notes that a request file was read.
func (q *fairQueue) readOne(now time.Time) {
	q.mu.Lock()
	q.read = now
	q.mu.Unlock()
}

// readAhead reports whether the next file of key, n bytes, is to be read
// ahead of its turn (0020): key is flooding and the bounds on what waits
// leave room. Its bytes then count until aheadDone.
func (q *fairQueue) readAhead(key string, n int) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	r := q.byKey[key]
	large := n >= largeRead
	if r == nil || len(r.jobs) < heavyJobs || q.ahead+n > q.aheadMax || q.jobsKept() >= q.jobsMax ||
		large && q.aheadLarge+n > q.aheadLargeMax {
		return false
	}
	q.ahead += n
	if large {
		q.aheadLarge += n
	}
	return true
}

// readAgainLater reports whether the next file of key, which readAhead
// did not keep, is to wait for key's turn by name, to be read again then
// (0036): key is flooding and fewer than againMax files wait so. It then
// counts until againDone.
func (q *fairQueue) readAgainLater(key string) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	r := q.byKey[key]
	if r == nil || len(r.jobs) < heavyJobs || q.again >= q.againMax {
		return false
	}
	q.again++
	return true
}

// jobsKept is the jobs waiting but the files waiting by name: what
// jobsMax bounds. q.mu is held.
func (q *fairQueue) jobsKept() int { return q.queued - q.again }

// againDone says a file that waited by name had its turn.
func (q *fairQueue) againDone() {
	q.mu.Lock()
	q.again--
	q.mu.Unlock()
}

// aheadDone says n bytes read ahead are no longer kept.
func (q *fairQueue) aheadDone(n int) {
	q.mu.Lock()
	q.ahead -= n
	if n >= largeRead {
		q.aheadLarge -= n
	}
	q.mu.Unlock()
}

// readAll says a worker reads every name waiting before it does a job
// (takeLight's aside): a flood crowds the queue, and what waits leaves
// room for more to be read ahead. Past maxQueuedJobs (the files waiting
// by name not counted) or maxAheadBytes a worker does a job after
// intakeBurst reads, as without a flood; its reads queue nothing
// (pushRead), though a flood's files may still wait by name.
func (q *fairQueue) readAll() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.heavy > 0 && q.crowded() && q.jobsKept() < q.jobsMax && q.ahead < q.aheadMax
}

// crowded says the workers are behind a flood: more than crowdedJobs
// jobs wait and request files were read within crowdedRecently. Then one
// job is done at a time, so that the rest of the broker's CPU goes to the
// inbox watcher and to reading (0014: with every worker busy writing a
// flood's answers, the watcher, woken through the runtime's poller, got a
// turn rarely, and a legitimate request waited there). A backlog found at
// start is not crowded once it is read: its answers are written by every
// worker. q.mu is held.
func (q *fairQueue) crowded() bool {
	return q.queued > crowdedJobs && time.Since(q.read) < crowdedRecently
}

// admit counts one more ask of key waiting, unless that would pass a
// bound (perRequester, all; 0 or less is no bound): then it says which,
// in words for the child, and whether this is the first refusal of the
// burst: since key (or, for the bound in all, anyone) last had no ask
// waiting.
//
// In the isolation mode one uid may hold at most half the bound in all
// (uidShare): a member of the ask group that claims a new session id per
// ask passes every per-session bound, and would otherwise fill the bound
// in all, so that every other user's asks were answered unavailable.
func (q *fairQueue) admit(key string, perRequester, all int) (refused string, first bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	r := q.get(key)
	uid := uidScope(key)
	switch {
	case perRequester > 0 && r.asks >= perRequester:
		first, r.refusing = !r.refusing, true
		return fmt.Sprintf("courier: %d asks from this session are already waiting; this one was not queued", r.asks), first
	case uid != "" && all > 0 && q.byUID[uid] >= uidShare(all):
		first, r.refusing = !r.refusing, true
		q.forget(r)
		return fmt.Sprintf("courier: %d asks from this user are already waiting; this one was not queued", q.byUID[uid]), first
	case all > 0 && q.asks >= all:
		first, q.refusingAll = !q.refusingAll, true
		q.forget(r)
		return fmt.Sprintf("courier: %d asks from all sessions are already waiting; this one was not queued", q.asks), first
	}
	r.asks++
	q.asks++
	if uid != "" {
		if q.byUID == nil {
			q.byUID = make(map[string]int)
		}
		q.byUID[uid]++
	}
	return "", false
}

// uidShare is how many of the asks in all one uid may hold: half, and
// at least one.
func uidShare(all int) int { return max(all/2, 1) }

// uidScope is the "uid:N" scope of a requester key of the isolation mode
// (from.scope), "" for a key of the same-uid mode.
func uidScope(key string) string {
	if !strings.HasPrefix(key, "uid:") {
		return ""
	}
	if i := strings.IndexByte(key, '/'); i > 0 {
		return key[:i]
	}
	return ""
}

// conclude counts one ask of key no longer waiting.
func (q *fairQueue) conclude(key string) {
	q.mu.Lock()
	if r := q.byKey[key]; r != nil && r.asks > 0 {
		r.asks--
		q.asks--
		if uid := uidScope(key); uid != "" {
			if q.byUID[uid]--; q.byUID[uid] <= 0 {
				delete(q.byUID, uid)
			}
		}
		if r.asks == 0 {
			r.refusing = false
		}
		if q.asks == 0 {
			q.refusingAll = false
		}
		q.forget(r)
	}
	q.mu.Unlock()
}

// waiting returns the asks admitted and not yet concluded, of key and in
// all.
func (q *fairQueue) waiting(key string) (mine, all int) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if r := q.byKey[key]; r != nil {
		mine = r.asks
	}
	return mine, q.asks
}
