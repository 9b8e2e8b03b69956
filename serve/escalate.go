package serve

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"sync/atomic"
	"time"

	"github.com/seed6639df8c/courier/decision"
	"github.com/seed6639df8c/courier/provenance"
	"github.com/seed6639df8c/courier/reviewlog"
	"github.com/seed6639df8c/courier/wire"
)

// escalation is an ask that left its worker for the chain and the
// terminal, until it is concluded. Thousands may be held at a terminal at
// once: it keeps only what concluding needs, and the request once, in ask
// (which a Holder shares).
type escalation struct {
	// ctx ends when the child gives up, the prompt times out or the
	// broker stops; its cause says which.
	ctx context.Context
	// request is the ask's request: compact while it waits for its turn,
	// whole for the chain and the terminal, slim once held.
	request wire.Request
	// terminal is what consult found for the terminal beside the request
	// (Ask's other fields); nil before, and once the ask is held: a held
	// ask's escalation lives as long as it waits, by the thousand, and
	// the terminal has its own copy.
	terminal     *Ask
	name, digest string
	// key is whose turn its jobs take, and whose bound it counts in.
	key string
	// from is who asked, as the transport and the rules vouch for it.
	from from
	// timer is the prompt timeout's, if there is one.
	timer *time.Timer
	// concluded makes a terminal's second answer a no-op.
	concluded atomic.Bool
}

func (x *escalation) req() *wire.Request { return &x.request }

// ask is the ask as the terminal gets it.
func (x *escalation) ask() Ask {
	var a Ask
	if x.terminal != nil {
		a = *x.terminal
	}
	a.Request = x.request
	return a
}

// escalate runs the chain, then the terminal, for an ask the rules did
// not decide, on a goroutine of its own. A terminal that is a Holder
// keeps the ask without it: the goroutine ends once the ask is handed
// over (docs/decisions/0008-held-asks.md). The answer is written in the
// requester's turn (concludeLater).
func (b *Broker) escalate(x *escalation) {
	if d, decided := b.consult(x); decided {
		b.concludeLater(x, d)
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
	b.concludeLater(x, d)
}

// consult logs the ask as prompted and runs the chain. It returns the
// chain's decision, or decided false when every link deferred; x.terminal
// then has the rules' resolution and the admitted grants for the terminal.
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
	t := &Ask{Resolution: b.askResolution(req, x.from)}
	x.terminal = t
	x.from.trust = t.Resolution.AgentTrust
	if x.from.uid >= 0 {
		t.Isolated, t.RequesterUID, t.RequesterUser = true, x.from.uid, b.users.name(x.from.uid)
	}
	b.log(reviewlog.ForwardedPromptedEntry{RequestID: req.ID, Parties: x.from.parties(parties(req)), RequestPath: b.requestPath(x.name), Floor: t.Resolution.Floor, Asked: askedOf(req)})
	if b.Chain != nil {
		if d, ok := b.Chain.Resolve(x.ctx, *req); ok {
			return d, true
		}
	}
	t.Grants = b.admittedGrants(req)
	return decision.Decision{}, false
}

// decide asks a terminal that is not a Holder, on this goroutine.
func (b *Broker) decide(x *escalation) (d decision.Decision) {
	defer func() {
		if r := recover(); r != nil {
			d = b.failed(x.req(), r)
		}
	}()
	return b.Terminal.Decide(x.ctx, x.ask())
}

// hold hands the ask to a Holder and keeps its withdrawal with the
// request, where the sweep, the prompt timeout and shutdown find it. The
// answer is concluded in the requester's turn, never on the terminal's
// goroutine, and only the first counts.
//
// The terminal gets the whole ask, its own copy; the broker keeps only
// what answering needs (slim): thousands of held asks then cost the
// broker no payload each, whatever the terminal keeps.
func (b *Broker) hold(h Holder, x *escalation) {
	done := func(d decision.Decision) {
		if x.concluded.CompareAndSwap(false, true) {
			b.concludeLater(x, d)
		}
	}
	// Slimmed before Hold: done may be called, and the ask concluded on
	// another goroutine, before Hold returns.
	held := x.ask()
	x.request, x.terminal = slim(x.request), nil
	var withdraw func(error)
	func() {
		defer func() {
			if r := recover(); r != nil {
				done(b.failed(x.req(), r))
			}
		}()
		withdraw = h.Hold(&held, done)
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
	b.log(reviewlog.ForwardingErrorEntry{RequestID: reviewlog.Str(req.ID), Message: "Failed to escalate forwarded permission request", Error: errors.New(reason), Stack: string(debug.Stack())})
	return decision.Deny("", provenance.GateError{Reason: reason})
}

// conclude answers an escalated ask with d, unless its child gave up, ends
// its escalation and tells the watcher what became of the request file.
// An ask that ended unanswered is answered for what ended it: the
// session, the prompt timeout or the forwarding timeout.
func (b *Broker) conclude(x *escalation, d decision.Decision) {
	defer b.escalated.Done()
	if x.timer != nil {
		x.timer.Stop()
	}
	b.release(x.name, b.answerEscalated(x, d))
	b.fair.conclude(x.key)
}

// answerEscalated is conclude's answer, and its outcome.
func (b *Broker) answerEscalated(x *escalation, d decision.Decision) outcome {
	req, path := x.req(), b.requestPath(x.name)
	switch cause := context.Cause(x.ctx); {
	case errors.Is(cause, errRequesterGone):
		b.settle(req.ID)
		b.log(reviewlog.ForwardedRequesterGoneEntry{RequestID: req.ID, RequestPath: path, Reason: cause.Error()})
		return dropped
	case errors.Is(cause, errSessionEnded):
		d = decision.NobodyAnswered(ReasonSessionEnded)
	case errors.Is(cause, errPromptTimeout):
		d = decision.NobodyAnswered(fmt.Sprintf("Nobody answered the prompt within %s", b.PromptTimeout))
	case errors.Is(cause, errForwardingTimeout):
		d = decision.NobodyAnswered(b.reasonNoAnswer())
	}
	return b.answer(*req, path, d, x.digest, false, x.from)
}
