package serve

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/seed6639df8c/courier/mailbox"
	"github.com/seed6639df8c/courier/reviewlog"
	"github.com/seed6639df8c/courier/wire"
)

// pending is a request between being read and being answered.
type pending struct {
	cancel context.CancelCauseFunc
	// withdraw takes the ask back from a Holder terminal; nil until one
	// holds it.
	withdraw func(cause error)
	name     string // the request file's name in requests/
	pid      int
	// created is when the child made the request: past the forwarding
	// timeout, its child no longer waits for the answer.
	created time.Time
	// seq is the registration's number; seen is the last sweep whose
	// listing of the inbox held the request file.
	seq, seen uint64
}

// register puts req in flight, read from the request file name, and
// returns the context of the work on it: the sweep, the prompt timeout
// and shutdown end it (end), with a cause that says why.
func (b *Broker) register(ctx context.Context, req wire.Request, name string) context.Context {
	reqCtx, cancel := context.WithCancelCause(ctx)
	b.mu.Lock()
	b.registered++
	b.inflight[req.ID] = &pending{cancel: cancel, name: name, pid: req.RequesterPID, created: time.UnixMilli(req.CreatedAt), seq: b.registered}
	b.mu.Unlock()
	return reqCtx
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

// sweepInflight cancels the work on requests whose child gave up (the
// request file is gone) or died (its pid no longer exists; its request is
// removed), and on requests older than the forwarding timeout, held asks
// included: they are answered that nobody answered in time. It looks for
// each request's file (lookInbox) and probes each distinct requester once
// with kill(pid, 0).
func (b *Broker) sweepInflight() {
	queued := 0
	if b.fair != nil {
		queued = b.fair.jobsWaiting()
	}
	b.mu.Lock()
	if len(b.inflight) == 0 {
		b.mu.Unlock()
		return
	}
	// A request registered by now was read from its file before: if the
	// look below misses the file, it went away since. One registered
	// later may have been written after the look; it waits for the next
	// sweep.
	listed := b.registered
	alive := make(map[int]bool) // each requester pid, probed once
	var look []*pending
	if n := len(b.inflight); n <= sweepStatMax && queued >= sweepLookRatio*n {
		look = make([]*pending, 0, n)
	}
	for _, p := range b.inflight {
		if p.pid > 0 {
			alive[p.pid] = false
		}
		if look != nil {
			look = append(look, p)
		}
	}
	b.mu.Unlock()

	names, there, err := b.lookInbox(look)
	if err != nil {
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
	for _, p := range there {
		p.seen = b.sweeps
	}
	var withdraw []func()
	expired := b.now().Add(-b.forwardingTimeout())
	for id, p := range b.inflight {
		switch {
		case p.created.Before(expired):
			withdraw = p.end(errForwardingTimeout, withdraw)
		case p.seq > listed:
		case p.seen != b.sweeps:
			withdraw = p.end(errRequesterGone, withdraw)
		case p.pid > 0 && !alive[p.pid]:
			dead = append(dead, gone{id, p})
		}
	}
	b.mu.Unlock()
	// A dead requester's file is removed before its ask ends: the end
	// releases the name to the watcher, which would otherwise find the
	// file still there, unidentified (0037), and hand it out again.
	for _, d := range dead {
		b.remove(b.requestPath(d.p.name))
	}
	if b.afterDeadRemoved != nil && len(dead) > 0 {
		b.afterDeadRemoved()
	}
	// One answered or timed out meanwhile was logged as such, and is not
	// logged as abandoned too.
	ended := dead[:0]
	b.mu.Lock()
	for _, d := range dead {
		if b.inflight[d.id] == d.p {
			withdraw = d.p.end(fmt.Errorf("%w: process %d is gone", errRequesterGone, d.p.pid), withdraw)
			ended = append(ended, d)
		}
	}
	b.mu.Unlock()
	for _, w := range withdraw {
		w()
	}
	for _, d := range ended {
		b.log(reviewlog.ForwardedRequesterGoneEntry{RequestID: d.id, RequestPath: b.requestPath(d.p.name), Reason: "requester process " + strconv.Itoa(d.p.pid) + " exited"})
	}
}

// While a flood waits in the inbox the sweep looks up the requests in
// flight one by one instead of listing the inbox: a lookup is a path walk,
// while a listing reads every name there (a string each, the directory's
// lock taken for each batch, which creates, renames and removals there
// wait for). With a flood's tens of thousands of files waiting (and one
// held ask is enough to sweep) a listing took 50-400 ms every second. A
// lookup costs several times what a listed name does, so the sweep looks
// up when the jobs waiting (each a file still in the inbox) are at least
// sweepLookRatio times the requests in flight, and at most sweepStatMax
// of them (DefaultMaxPending: past it only an operator's raised bound
// keeps that many in flight). Otherwise the inbox is small and a listing
// is the cheaper: 3,000 held asks and nothing else waiting are listed in
// 2-3 ms.
const (
	sweepStatMax   = DefaultMaxPending
	sweepLookRatio = 10
)

// lookInbox says which of the requests in flight still have their file:
// those of look, when look is not nil, each looked up by its path (there;
// a lookup that fails otherwise than "not there" proves no absence and
// counts as there), else every name in the inbox (names). A missing
// inbox holds nothing; an inbox that cannot be listed is an error.
func (b *Broker) lookInbox(look []*pending) (names []string, there []*pending, err error) {
	if look != nil {
		there = look[:0]
		for _, p := range look {
			if _, err := os.Lstat(b.requestPath(p.name)); !errors.Is(err, fs.ErrNotExist) {
				there = append(there, p)
			}
		}
		return nil, there, nil
	}
	list := b.listInbox
	if list == nil {
		list = b.watcher.List
	}
	names, err = list()
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil, nil
	}
	return names, nil, err
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
		b.forgetAnswered(a)
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
	b.sweepResponses(cutoff)
}

// responsesBatch is how many entries of responses/ sweepResponses lists at
// a time: a flood nobody collects leaves hundreds of thousands of answers
// there, and listing them all at once took 26 MB of heap every ten
// seconds, which the collector's pacing then doubled.
const responsesBatch = 1024

// sweepResponses removes the responses written before cutoff: nobody
// collected them.
func (b *Broker) sweepResponses(cutoff time.Time) {
	responses, err := b.Layout.ResponsesDir(b.Session)
	if err != nil {
		return
	}
	d, err := os.Open(responses)
	if err != nil {
		return
	}
	defer d.Close()
	for {
		entries, err := d.ReadDir(responsesBatch)
		for _, e := range entries {
			if !mailbox.IsMailName(e.Name()) {
				continue
			}
			if info, err := e.Info(); err == nil && info.ModTime().Before(cutoff) {
				b.remove(filepath.Join(responses, e.Name()))
				if !b.Layout.Isolated() {
					// In the isolation mode a child cannot remove the
					// response it collected (responses/ is the broker's):
					// every answer is removed here, and that says nothing.
					b.log(reviewlog.ForwardingWarningEntry{Message: "removed a response nobody collected", ResponsePath: filepath.Join(responses, e.Name())})
				}
			}
		}
		if err != nil {
			return // io.EOF: all listed
		}
	}
}
