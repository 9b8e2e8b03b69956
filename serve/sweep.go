package serve

import (
	"context"
	"errors"
	"fmt"
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
// included: they are answered that nobody answered in time. Its cost does
// not grow with the asks held per child: one listing of the inbox and one
// kill(pid, 0) per distinct requester.
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
	expired := b.now().Add(-b.forwardingTimeout())
	for id, p := range b.inflight {
		switch {
		case p.created.Before(expired):
			withdraw = p.end(errForwardingTimeout, withdraw)
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
		b.log(reviewlog.ForwardedRequesterGoneEntry{RequestID: d.id, RequestPath: path, Reason: "requester process " + strconv.Itoa(d.p.pid) + " exited"})
	}
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
			delete(b.answeredDigest, a.id)
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
			b.log(reviewlog.ForwardingWarningEntry{Message: "removed a response nobody collected", ResponsePath: filepath.Join(responses, e.Name())})
		}
	}
}
