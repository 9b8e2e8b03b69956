package serve

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/seed6639df8c/courier/decision"
	"github.com/seed6639df8c/courier/grants"
	"github.com/seed6639df8c/courier/mailbox"
	"github.com/seed6639df8c/courier/provenance"
	"github.com/seed6639df8c/courier/reviewlog"
	"github.com/seed6639df8c/courier/rules"
	"github.com/seed6639df8c/courier/wire"
)

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

var (
	errSessionEnded  = errors.New("the session ended")
	errRequesterGone = errors.New("the requester gave up")
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
	// OnError hears of problems worth an operator's eye (stderr); nil
	// discards them. They are in the review log too.
	OnError func(error)
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
	// registered numbers the in-flight registrations and sweeps the
	// sweeps, so that a sweep judges only what was registered before it
	// listed the inbox.
	registered, sweeps uint64
	// escalated counts the asks that left their worker and are not yet
	// concluded (deciding, or held by the terminal).
	escalated sync.WaitGroup
	watcher   *mailbox.Watcher
}

// unwrittenAnswer is a decision whose response could not be written, with
// the digest of the request bytes it was made on: the retry binds it to
// what was decided, not to whatever the file holds by then.
type unwrittenAnswer struct {
	d      decision.Decision
	digest string
}

// answeredAt is one entry of Broker.answeredOrder.
type answeredAt struct {
	id string
	at time.Time
}

// pending is a request between being read and being answered.
type pending struct {
	cancel context.CancelCauseFunc
	// withdraw takes the ask back from a Holder terminal; nil until one
	// holds it.
	withdraw func(cause error)
	name     string // the request file's name in requests/
	pid      int
	// seq is the registration's number; seen is the last sweep whose
	// listing of the inbox held the request file.
	seq, seen uint64
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

func (b *Broker) log(event string, details map[string]any) {
	if err := b.Log.Write(event, details); err != nil {
		b.report(err)
	}
}

func (b *Broker) forwardingTimeout() time.Duration {
	if b.ForwardingTimeout > 0 {
		return b.ForwardingTimeout
	}
	return rules.DefaultForwardingTimeout
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
		b.log(reviewlog.ForwardingWarning, map[string]any{"message": fmt.Sprintf("removed %d heartbeat records of dead serving sessions", n)})
	}
	b.inflight = make(map[string]*pending)
	b.answered = make(map[string]time.Time)
	b.unwritten = make(map[string]unwrittenAnswer)

	// Every response is bound to its request (finish); say so, so that a
	// courier child refuses an unbound answer planted in our name.
	heartbeat := &mailbox.HeartbeatPublisher{Layout: b.Layout, Session: session, Now: b.Now, ResponseBinding: wire.BindingSHA256}
	publish := func() {
		if err := heartbeat.Publish(); err != nil {
			b.report(fmt.Errorf("heartbeat: %w", err))
		}
	}
	publish()
	b.log(reviewlog.ForwardedServingStarted, map[string]any{"sessionId": session})

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
	stopWorkers := make(chan struct{})
	var workersDone sync.WaitGroup
	for range workers {
		workersDone.Add(1)
		go func() {
			defer workersDone.Done()
			for {
				select {
				case <-stopWorkers:
					return
				case name, ok := <-b.watcher.Ready():
					if !ok {
						return
					}
					b.handle(handling, name)
				}
			}
		}()
	}

	// One timer for the heartbeat, the sweeps and housekeeping: an idle
	// broker wakes once per tick, not once for each.
	sweepInterval := b.SweepInterval
	if sweepInterval <= 0 {
		sweepInterval = DefaultSweepInterval
	}
	beat := newBeat(time.Now(), sweepInterval, mailbox.HeartbeatInterval)
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
			b.log(reviewlog.ForwardedServingStopped, map[string]any{"sessionId": session})
			return nil
		case now := <-ticker.C:
			heartbeat, sweep := beat.due(now)
			if heartbeat {
				publish()
			}
			if sweep && stopped == nil {
				b.watcher.Rescan()
				b.sweepInflight()
				b.reloadJournal()
				if sweeps++; sweeps%housekeepingEvery == 0 {
					b.housekeeping()
				}
			}
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
	if opts.OnError == nil {
		opts.OnError = func(err error) { b.report(fmt.Errorf("watching the inbox: %w", err)) }
	}
	return opts
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
	b.escalated.Wait()
	// What is left on disk was never picked up: answer it too.
	entries, err := os.ReadDir(requests)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		b.report(fmt.Errorf("listing the inbox at shutdown: %w", err))
	}
	ended, cancel := context.WithCancelCause(context.Background())
	cancel(errSessionEnded)
	for _, e := range entries {
		if mailbox.IsMailName(e.Name()) {
			b.handle(ended, e.Name())
		}
	}
	b.escalated.Wait()
}

// sweepInflight cancels the work on requests whose child gave up (the
// request file is gone) or died (its pid no longer exists; its request is
// removed). Its cost does not grow with the asks held per child: one
// listing of the inbox and one kill(pid, 0) per distinct requester.
func (b *Broker) sweepInflight() {
	b.mu.Lock()
	if len(b.inflight) == 0 {
		b.mu.Unlock()
		return
	}
	// A request registered by now was read from its file before: if the
	// listing below lacks the file, it went away since. One registered
	// later may have been written after the listing; it waits for the
	// next sweep.
	listed := b.registered
	alive := make(map[int]bool) // each requester pid, probed once
	for _, p := range b.inflight {
		if p.pid > 0 {
			alive[p.pid] = false
		}
	}
	b.mu.Unlock()

	names, err := b.watcher.List()
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		// Absence is not proven: judge nothing this time.
		b.report(fmt.Errorf("listing the inbox: %w", err))
		return
	}
	for pid := range alive {
		alive[pid] = mailbox.ProcessAlive(pid)
	}

	type gone struct {
		id string
		p  *pending
	}
	var dead []gone
	b.mu.Lock()
	b.sweeps++
	for _, name := range names {
		if p := b.inflight[strings.TrimSuffix(name, ".json")]; p != nil && p.name == name {
			p.seen = b.sweeps
		}
	}
	var withdraw []func()
	for id, p := range b.inflight {
		switch {
		case p.seq > listed:
		case p.seen != b.sweeps:
			withdraw = p.end(errRequesterGone, withdraw)
		case p.pid > 0 && !alive[p.pid]:
			withdraw = p.end(fmt.Errorf("%w: process %d is gone", errRequesterGone, p.pid), withdraw)
			dead = append(dead, gone{id, p})
		}
	}
	b.mu.Unlock()
	for _, w := range withdraw {
		w()
	}
	for _, d := range dead {
		path := b.requestPath(d.p.name)
		b.remove(path)
		b.log(reviewlog.ForwardedRequesterGone, map[string]any{"requestId": d.id, "requestPath": path, "reason": "requester process " + strconv.Itoa(d.p.pid) + " exited"})
	}
}

// end cancels the work on a request with cause and, when a terminal
// holds its ask, appends the ask's withdrawal to withdraw, for the caller
// to run once b.mu is released. The first cause is what the request's
// context reports.
func (p *pending) end(cause error, withdraw []func()) []func() {
	p.cancel(cause)
	if w := p.withdraw; w != nil {
		withdraw = append(withdraw, func() { w(cause) })
	}
	return withdraw
}

// endRequest is end for request id, if it is still in flight.
func (b *Broker) endRequest(id string, cause error) {
	b.mu.Lock()
	var withdraw []func()
	if p := b.inflight[id]; p != nil {
		withdraw = p.end(cause, nil)
	}
	b.mu.Unlock()
	for _, w := range withdraw {
		w()
	}
}

// requestPath is the path of a request file named name.
func (b *Broker) requestPath(name string) string {
	return filepath.Join(b.watcher.Dir(), name)
}

// housekeeping removes what nobody will ever collect and restores the
// inbox a pi child's cleanup may have removed.
func (b *Broker) housekeeping() {
	if err := b.Layout.EnsureInbox(b.Session); err != nil {
		b.report(err)
	}
	if _, err := b.Layout.SweepTemp(b.now(), tempMaxAge); err != nil {
		b.report(fmt.Errorf("sweeping temp files: %w", err))
	}
	cutoff := b.now().Add(-b.forwardingTimeout())
	b.mu.Lock()
	n := 0
	for _, a := range b.answeredOrder {
		if !a.at.Before(cutoff) {
			break
		}
		if b.answered[a.id].Equal(a.at) {
			delete(b.answered, a.id)
		}
		n++
	}
	b.answeredOrder = b.answeredOrder[n:]
	if len(b.answeredOrder) == 0 {
		b.answeredOrder = nil // let a burst's backing array go
	}
	for id := range b.unwritten {
		// A kept decision whose request is gone (its child gave up)
		// will never be delivered again: nobody would read it.
		if path, err := b.Layout.RequestPath(b.Session, id); err == nil {
			if _, err := os.Lstat(path); errors.Is(err, os.ErrNotExist) {
				delete(b.unwritten, id)
			}
		}
	}
	b.mu.Unlock()
	responses, err := b.Layout.ResponsesDir(b.Session)
	if err != nil {
		return
	}
	entries, _ := os.ReadDir(responses)
	for _, e := range entries {
		if !mailbox.IsMailName(e.Name()) {
			continue
		}
		if info, err := e.Info(); err == nil && info.ModTime().Before(cutoff) {
			b.remove(filepath.Join(responses, e.Name()))
			b.log(reviewlog.ForwardingWarning, map[string]any{"message": "removed a response nobody collected", "responsePath": filepath.Join(responses, e.Name())})
		}
	}
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

// release hands a request's name back to the watcher once its file is
// dealt with: for good when it is gone, for another try on the next event
// or rescan when it could not be removed (a read-only or failing mailbox),
// so that it is not left in the inbox for the broker's life.
func (b *Broker) release(name string, removed bool) {
	if removed {
		b.watcher.Done(name)
	} else {
		b.watcher.Forget(name)
	}
}

// baseDetails are the fields every serving-side entry about a request has.
func (b *Broker) baseDetails(req wire.Request, path string) map[string]any {
	return map[string]any{
		"requestId": req.ID, "source": "primary", "requesterAgentName": req.RequesterAgentName,
		"requesterSessionId": req.RequesterSessionID, "targetSessionId": req.TargetSessionID, "requestPath": path,
	}
}

// reject logs a request file that cannot be served and removes it.
func (b *Broker) reject(name, path, why string, err error) {
	details := map[string]any{"message": "Ignoring invalid forwarded permission request: " + why, "requestPath": path}
	if err != nil {
		details["error"] = err.Error()
	}
	b.log(reviewlog.ForwardingWarning, details)
	if err != nil {
		b.report(fmt.Errorf("ignoring %s: %s: %w", path, why, err))
	} else {
		b.report(fmt.Errorf("ignoring %s: %s", path, why))
	}
	b.remove(path)
	b.watcher.Done(name)
}

// handle takes one request file from read to answer, or hands it to an
// escalation goroutine. It never panics: a failure to decide is a
// gate_error denial.
func (b *Broker) handle(ctx context.Context, name string) {
	path := b.requestPath(name)
	id, err := mailbox.RequestIDFromName(name)
	if err != nil {
		b.reject(name, path, "its name is not <id>.json", err)
		return
	}
	b.mu.Lock()
	u, unwritten := b.unwritten[id]
	_, answered := b.answered[id]
	_, busy := b.inflight[id]
	b.mu.Unlock()
	if busy {
		// Delivered again while still in flight (rewritten in place):
		// the running handler owns it.
		b.watcher.Done(name)
		return
	}

	data, err := mailbox.ReadFile(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		b.watcher.Done(name)
		return
	case isUnsafe(err):
		b.reject(name, path, "not a plain file this broker may read", err)
		return
	case err != nil:
		// EACCES, EMFILE...: keep the request and try again on a rescan.
		b.log(reviewlog.ForwardingError, map[string]any{"message": "Failed to read forwarded permission request", "requestPath": path, "error": err.Error()})
		b.report(err)
		b.watcher.Forget(name)
		return
	}
	req, dropped, err := wire.DecodeRequest(data)
	if err != nil {
		if b.stillBeingWritten(path) {
			// A writer that does not rename into place (not pi, not
			// courier) may still be writing: look again on the next
			// event or rescan rather than throw its request away.
			b.watcher.Forget(name)
			return
		}
		b.reject(name, path, "malformed", err)
		return
	}
	if req.ID != id {
		b.reject(name, path, fmt.Sprintf("its id %q does not match its file name", req.ID), nil)
		return
	}
	if target, err := mailbox.NormalizeSessionID(req.TargetSessionID); err != nil || target != b.Session {
		b.reject(name, path, fmt.Sprintf("it targets session %q, not this session %q", req.TargetSessionID, b.Session), nil)
		return
	}
	for _, d := range dropped {
		b.log(reviewlog.ForwardingWarning, map[string]any{"requestId": req.ID, "message": "dropped a malformed optional field", "error": d.Error()})
	}
	if unwritten {
		b.finish(req, name, path, u.d, u.digest, "")
		return
	}
	digest := wire.RequestDigest(data)
	if answered || b.answeredOnDisk(req, path, digest) {
		// Answered before (this run, or by a broker that died before it
		// removed the request): never answer twice.
		b.release(name, b.remove(path))
		return
	}
	if why := b.orphaned(req); why != "" {
		b.log(reviewlog.ForwardedRequesterGone, map[string]any{"requestId": req.ID, "requestPath": path, "reason": why})
		b.remove(path)
		b.watcher.Done(name)
		return
	}

	reqCtx, cancel := context.WithCancelCause(ctx)
	b.mu.Lock()
	b.registered++
	b.inflight[req.ID] = &pending{cancel: cancel, name: name, pid: req.RequesterPID, seq: b.registered}
	b.mu.Unlock()

	if context.Cause(ctx) == nil {
		if d, event, decided := b.recordedAuthority(req); decided {
			// The response first: the review entry that says the rules
			// decided is written after it, off the child's wait.
			b.finish(req, name, path, d, digest, event)
			return
		}
	}
	b.escalated.Add(1)
	go b.escalate(&escalation{ctx: reqCtx, ask: Ask{Request: req}, name: name, digest: digest})
}

// writeGrace is how long a malformed request file is given to be
// completed by a writer that writes in place.
const writeGrace = 2 * time.Second

func (b *Broker) stillBeingWritten(path string) bool {
	info, err := os.Lstat(path)
	return err == nil && b.now().Sub(info.ModTime()) < writeGrace
}

func isUnsafe(err error) bool {
	var unsafe *mailbox.UnsafeFileError
	return errors.As(err, &unsafe)
}

// answeredOnDisk reports whether responses/ already holds this broker's
// answer to exactly these request bytes: a broker that died between
// writing the response and removing the request. Anything else found
// there (an unbound, foreign or unreadable file: planted, or copied from
// another request) is not an answer; it is logged and written over, so
// it can neither stop nor replace the real answer.
func (b *Broker) answeredOnDisk(req wire.Request, path, digest string) bool {
	respPath, err := b.Layout.ResponsePath(b.Session, req.ID)
	if err != nil {
		return false
	}
	data, err := mailbox.ReadFile(respPath)
	if errors.Is(err, os.ErrNotExist) {
		return false
	}
	var why error
	if err == nil {
		var resp wire.Response
		if resp, _, err = wire.DecodeResponse(data); err == nil {
			if why = wire.CheckBinding(resp, req.ID, digest, true); why == nil {
				return true
			}
		}
	}
	if why == nil {
		why = err
	}
	details := b.baseDetails(req, path)
	details["message"] = "a response that does not answer this request was already there; answering over it"
	details["responsePath"] = respPath
	details["error"] = why.Error()
	b.log(reviewlog.ForwardingWarning, details)
	b.report(fmt.Errorf("request %s: answering over %s, which does not answer it: %w", req.ID, respPath, why))
	return false
}

// orphaned says why nobody can be waiting for req any more, or "".
func (b *Broker) orphaned(req wire.Request) string {
	if req.RequesterPID > 0 && !mailbox.ProcessAlive(req.RequesterPID) {
		return "requester process " + strconv.Itoa(req.RequesterPID) + " exited"
	}
	if age := b.now().Sub(time.UnixMilli(req.CreatedAt)); age > b.forwardingTimeout() {
		return fmt.Sprintf("created %s ago, past the forwarding timeout", age.Round(time.Second))
	}
	return ""
}

// recordedAuthority is SPEC §4 step 1: the rules and session grants, only
// for a request that carries the child-fixed facts. With a decision it
// returns the review event that records it (auto_approved or
// auto_denied), for finish to write.
func (b *Broker) recordedAuthority(req wire.Request) (decision.Decision, string, bool) {
	var (
		rd rules.Decision
		by func() provenance.Source
	)
	switch {
	case req.AccessIntent != nil:
		rd = b.Policy.Resolve(rules.QueryFromIntent(req.AccessIntent))
		by = rd.DecidedBy
	case b.LegacyBashDisplayMatch && req.Surface == "bash" && req.Value != "":
		// The display value is what a 20.x child shows, not facts it
		// fixed: say so in the provenance.
		rd = b.Policy.Resolve(rules.Query{Surface: "bash", MatchValues: []string{req.Value}})
		by = func() provenance.Source {
			return provenance.Rule{Surface: "bash", Pattern: rd.Pattern, Origin: provenance.Str(DisplayValueOrigin + "/" + string(rd.Origin))}
		}
	default:
		return decision.Decision{}, "", false
	}
	switch rd.Action {
	case rules.Allow:
		return decision.Allow(by()), reviewlog.ForwardedAutoApproved, true
	case rules.Deny:
		return decision.Deny(rd.Reason, by()), reviewlog.ForwardedAutoDenied, true
	}
	return decision.Decision{}, "", false
}

// escalation is an ask that left its worker for the chain and the
// terminal, until it is concluded. Thousands may be held at a terminal at
// once: it keeps only what concluding needs, and the request once, in ask
// (which a Holder shares).
type escalation struct {
	// ctx ends when the child gives up, the prompt times out or the
	// broker stops; its cause says which.
	ctx          context.Context
	ask          Ask
	name, digest string
	// timer is the prompt timeout's, if there is one.
	timer *time.Timer
	// concluded makes a terminal's second answer a no-op.
	concluded atomic.Bool
}

func (x *escalation) req() *wire.Request { return &x.ask.Request }

// escalate runs the chain and the terminal for an ask (SPEC §4 steps 2-3),
// on a goroutine of its own. A terminal that is a Holder keeps the ask
// without it: the goroutine ends once the ask is handed over, and the ask
// is concluded on a fresh goroutine when the terminal calls back.
func (b *Broker) escalate(x *escalation) {
	if d, decided := b.consult(x); decided {
		b.conclude(x, d)
		return
	}
	if b.PromptTimeout > 0 {
		id := x.req().ID
		x.timer = time.AfterFunc(b.PromptTimeout, func() { b.endRequest(id, errPromptTimeout) })
	}
	if h, ok := b.Terminal.(Holder); ok {
		// The hand-over counts as escalated work of its own: an answer
		// may conclude the ask (escalated.Done) while hold still runs,
		// and Run must not return before it does.
		b.escalated.Add(1)
		defer b.escalated.Done()
		b.hold(h, x)
		return
	}
	d := b.decide(x)
	b.conclude(x, d)
}

// consult logs the ask as prompted and runs the chain. It returns the
// chain's decision, or decided false when every link deferred; x.ask then
// has the rules' resolution for the terminal.
func (b *Broker) consult(x *escalation) (d decision.Decision, decided bool) {
	req := x.req()
	defer func() {
		if r := recover(); r != nil {
			d, decided = b.failed(req, r), true
		}
	}()
	if context.Cause(x.ctx) != nil {
		return decision.NobodyAnswered(ReasonSessionEnded), true
	}
	if req.AccessIntent != nil {
		x.ask.Resolution = b.Policy.Resolve(rules.QueryFromIntent(req.AccessIntent))
	}
	details := b.baseDetails(*req, b.requestPath(x.name))
	if floor := x.ask.Resolution.Floor; floor != "" {
		details["floor"] = floor
	}
	b.log(reviewlog.ForwardedPrompted, details)
	if b.Chain != nil {
		if d, ok := b.Chain.Resolve(x.ctx, *req); ok {
			return d, true
		}
	}
	return decision.Decision{}, false
}

// decide asks a terminal that is not a Holder, on this goroutine.
func (b *Broker) decide(x *escalation) (d decision.Decision) {
	defer func() {
		if r := recover(); r != nil {
			d = b.failed(x.req(), r)
		}
	}()
	return b.Terminal.Decide(x.ctx, x.ask)
}

// hold hands the ask to a Holder and keeps its withdrawal with the
// request, where the sweep, the prompt timeout and shutdown find it. The
// answer is concluded on a goroutine of its own, never on the terminal's,
// and only the first counts.
func (b *Broker) hold(h Holder, x *escalation) {
	done := func(d decision.Decision) {
		if x.concluded.CompareAndSwap(false, true) {
			go b.conclude(x, d)
		}
	}
	var withdraw func(error)
	func() {
		defer func() {
			if r := recover(); r != nil {
				done(b.failed(x.req(), r))
			}
		}()
		withdraw = h.Hold(&x.ask, done)
	}()
	if withdraw == nil {
		return
	}
	withdraw = b.guardWithdraw(withdraw, x, done)
	b.mu.Lock()
	if p := b.inflight[x.req().ID]; p != nil {
		p.withdraw = withdraw
	}
	// Ended before the withdrawal was kept: nobody else will withdraw it.
	// (Ended because it was answered: nothing to withdraw.)
	cause := context.Cause(x.ctx)
	b.mu.Unlock()
	if cause != nil && !x.concluded.Load() {
		withdraw(cause)
	}
}

// guardWithdraw wraps a terminal's withdraw so that a panic in it, which
// would otherwise crash the broker from the sweep or shutdown, concludes
// the ask as a gate_error denial instead: a terminal that failed to
// withdraw may never call done, and shutdown waits for every ask.
func (b *Broker) guardWithdraw(withdraw func(error), x *escalation, done func(decision.Decision)) func(error) {
	return func(cause error) {
		defer func() {
			if r := recover(); r != nil {
				done(b.failed(x.req(), r))
			}
		}()
		withdraw(cause)
	}
}

// failed is the gate_error denial of an ask whose deciding panicked.
func (b *Broker) failed(req *wire.Request, r any) decision.Decision {
	reason := fmt.Sprintf("deciding failed: %v", r)
	b.log(reviewlog.ForwardingError, map[string]any{"requestId": req.ID, "message": "Failed to escalate forwarded permission request", "error": reason, "stack": string(debug.Stack())})
	return decision.Deny("", provenance.GateError{Reason: reason})
}

// conclude answers an escalated ask with d, unless its child gave up, and
// ends its escalation. An ask that ended unanswered is answered for what
// ended it: the session, or the prompt timeout.
func (b *Broker) conclude(x *escalation, d decision.Decision) {
	defer b.escalated.Done()
	if x.timer != nil {
		x.timer.Stop()
	}
	req, path := x.req(), b.requestPath(x.name)
	switch cause := context.Cause(x.ctx); {
	case errors.Is(cause, errRequesterGone):
		b.settle(req.ID)
		b.log(reviewlog.ForwardedRequesterGone, map[string]any{"requestId": req.ID, "requestPath": path, "reason": cause.Error()})
		b.watcher.Done(x.name)
		return
	case errors.Is(cause, errSessionEnded):
		d = decision.NobodyAnswered(ReasonSessionEnded)
	case errors.Is(cause, errPromptTimeout):
		d = decision.NobodyAnswered(fmt.Sprintf("Nobody answered the prompt within %s", b.PromptTimeout))
	}
	b.finish(*req, x.name, path, d, x.digest, "")
}

var errPromptTimeout = errors.New("prompt timeout")

// finish applies the grant scope, writes the response atomically, bound to
// the request bytes (digest) it decides, and only then removes the request.
// ruled, when not empty, is the review event of the recorded authority
// that decided (auto_approved, auto_denied); it is logged once the
// response is written (or could not be), before finish's own entry.
func (b *Broker) finish(req wire.Request, name, path string, d decision.Decision, digest, ruled string) {
	defer b.settle(req.ID)
	if d.State == decision.StateApprovedForServingSession {
		b.recordWholeSession(req, path, d)
	}
	resp := d.Response(b.Session, b.now().UnixMilli()).Bind(req.ID, digest)
	respPath, _ := b.Layout.ResponsePath(b.Session, req.ID)
	data, err := wire.EncodeResponse(resp)
	if err == nil {
		err = b.Layout.WriteResponse(b.Session, req.ID, data)
	}
	if err != nil {
		// Keep the request; the next attempt rewrites this decision
		// instead of asking again.
		b.mu.Lock()
		b.unwritten[req.ID] = unwrittenAnswer{d: d, digest: digest}
		b.mu.Unlock()
		b.logRuled(ruled, req, path, d)
		b.log(reviewlog.ForwardingError, map[string]any{"requestId": req.ID, "message": "Failed to write forwarded permission response", "responsePath": respPath, "error": err.Error()})
		b.report(fmt.Errorf("answering %s: %w", req.ID, err))
		b.watcher.Forget(name)
		return
	}
	b.mu.Lock()
	delete(b.unwritten, req.ID)
	at := b.now()
	b.answered[req.ID] = at
	b.answeredOrder = append(b.answeredOrder, answeredAt{req.ID, at})
	b.mu.Unlock()
	removed := b.remove(path)
	b.logRuled(ruled, req, path, d)
	event := reviewlog.ForwardedDenied
	if d.Approved() {
		event = reviewlog.ForwardedApproved
	}
	b.log(event, map[string]any{
		"requestId": req.ID, "source": "primary", "requesterAgentName": req.RequesterAgentName,
		"requesterSessionId": req.RequesterSessionID, "targetSessionId": req.TargetSessionID,
		"responsePath": respPath, "approved": d.Approved(), "resolution": string(d.State),
		"denialReason": nullable(d.DenialReason), "decidedBy": d.DecidedBy,
	})
	b.release(name, removed)
}

// logRuled writes the recorded authority's review entry, if any.
func (b *Broker) logRuled(event string, req wire.Request, path string, d decision.Decision) {
	if event == "" {
		return
	}
	details := b.baseDetails(req, path)
	details["decidedBy"] = d.DecidedBy
	b.log(event, details)
}

// settle ends a request's time in flight and releases its context.
func (b *Broker) settle(id string) {
	b.mu.Lock()
	p := b.inflight[id]
	delete(b.inflight, id)
	b.mu.Unlock()
	if p != nil {
		p.cancel(nil)
	}
}

// recordWholeSession records the grants the operator chose (d.Grants), or
// else the request's suggestion, into the broker's session rules and
// journals them (seed 002: "the whole session").
func (b *Broker) recordWholeSession(req wire.Request, path string, d decision.Decision) {
	chosen := d.Grants
	if chosen == nil && req.SessionApproval != nil {
		chosen = req.SessionApproval.Grants
	}
	if len(chosen) == 0 {
		return
	}
	width := rules.WidthProven
	if d.SessionGrantWidth == wire.GrantFamily {
		width = rules.WidthFamily
	}
	gs := make([]rules.Grant, len(chosen))
	for i, g := range chosen {
		gs[i] = rules.Grant{Surface: g.Surface, Pattern: g.Pattern}
	}
	defer b.Journal.Recording()() // a reload waits until the grant is journaled
	sessions := b.Policy.Sessions()
	recorded, err := sessions.Record(width, gs...)
	if err != nil {
		b.log(reviewlog.ForwardingError, map[string]any{"requestId": req.ID, "message": "Failed to record session grants", "error": err.Error()})
		b.report(err)
		return
	}
	if b.Journal != nil {
		if err := b.Journal.Save(sessions); err != nil {
			b.log(reviewlog.ForwardingError, map[string]any{"requestId": req.ID, "message": "Failed to journal session grants", "error": err.Error()})
			b.report(err)
		}
	}
	details := b.baseDetails(req, path)
	details["grants"] = recorded
	b.log(reviewlog.ForwardedSessionRecorded, details)
}

func nullable(s string) any {
	if s == "" {
		return nil
	}
	return s
}
