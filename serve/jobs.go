package serve

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"

	"github.com/seed6639df8c/courier/decision"
	"github.com/seed6639df8c/courier/reviewlog"
	"github.com/seed6639df8c/courier/wire"
)

// The jobs intake leaves for a requester's turn, and what they keep of
// the request while they wait: only what answering needs.

// answerJob writes d, already decided, when its requester's turn comes,
// unless the child gave up meanwhile (its request is gone): a flood whose
// requests are withdrawn costs a look each, not an answer each.
func (b *Broker) answerJob(name string, req wire.Request, d decision.Decision, digest string, ruled bool, f from) job {
	return func() {
		path := b.requestPath(name)
		if _, err := os.Lstat(path); errors.Is(err, fs.ErrNotExist) {
			b.log(reviewlog.ForwardedRequesterGoneEntry{RequestID: req.ID, RequestPath: path, Reason: "the request was removed while it waited for its turn"})
			b.release(name, dropped)
			return
		}
		b.release(name, b.answer(req, path, d, digest, ruled, f))
	}
}

// refuseJob answers an ask past a bound (why says which) "unavailable"
// when its requester's turn comes: never a user's denial, never silence.
// The first refusal of a burst is told to the operator; each refused ask
// has its own denied entry with the reason.
func (b *Broker) refuseJob(name string, req wire.Request, digest, why string, first bool, f from) job {
	if first {
		p := f.parties(parties(&req))
		b.log(reviewlog.ForwardingWarningEntry{Message: "asks past a bound are answered unavailable until some of those waiting conclude: " + why, RequestID: reviewlog.Str(req.ID), Parties: &p, RequestPath: b.requestPath(name)})
		b.report(fmt.Errorf("session %q: %s; answering its asks unavailable until some of those waiting conclude", req.RequesterSessionID, why))
	}
	return b.answerJob(name, compact(req), decision.NobodyAnswered(why), digest, false, f)
}

// escalateJob starts the escalation of an ask admitted within the bounds
// when its requester's turn comes. A grant recorded while it waited may
// decide it by then; a request that ended while it waited (its child gave
// up, the forwarding timeout, the session ended) is answered for that,
// without an escalation.
//
// While it waits the ask keeps its request compact (intake), not its
// prompt text and payload: the chain and the terminal get the request
// read again from its file, the very bytes decided at intake (reread).
func (b *Broker) escalateJob(x *escalation) job {
	return func() {
		if context.Cause(x.ctx) == nil {
			req, ok := b.reread(x)
			if !ok {
				b.fair.conclude(x.key)
				return
			}
			if d, ruled, decided := b.recordedAuthority(req, x.from); decided {
				b.release(x.name, b.answer(compact(req), b.requestPath(x.name), d, x.digest, true, ruled))
				b.fair.conclude(x.key)
				return
			}
			x.request = req
			b.escalated.Add(1)
			if b.escalatesInline() {
				b.escalate(x)
			} else {
				go b.escalate(x)
			}
			return
		}
		b.release(x.name, b.answerEscalated(x, decision.NobodyAnswered(ReasonSessionEnded)))
		b.fair.conclude(x.key)
	}
}

// escalatesInline reports whether an escalation runs in its job rather
// than on a goroutine of its own: when nothing in it can wait, no chain to
// consult and a terminal that is a Holder, which takes the ask at once.
// A flood of asks held at the prompt then starts no goroutine each: when
// each had its own, 10,000 asks arriving in a second had up to 1,191 of
// them at once, with 11 MB of stacks, which the process kept as heap
// after they ended (BENCHMARKS.md, "10,000 held asks in less memory").
func (b *Broker) escalatesInline() bool {
	_, holds := b.Terminal.(Holder)
	return holds && b.Chain == nil
}

// reread reads the request file of an ask whose turn came, for the chain
// and the terminal, and returns it if it still holds the bytes the ask was
// admitted on (x.digest). Otherwise the ask ends here, its file released
// (the caller concludes it), and ok is false:
//   - the file is gone: the child gave up (as answerJob finds it);
//   - it cannot be read: the ask is let go and the file delivered again
//     on a rescan, as intake does with a file it cannot read;
//   - it holds other bytes (rewritten in place while the ask waited): it
//     is answered "unavailable" with the reason, bound to the bytes now
//     there, as reused does. It is never decided: what was admitted is
//     not what is there, and a refusal is never an allow.
func (b *Broker) reread(x *escalation) (req wire.Request, ok bool) {
	id, path := x.req().ID, b.requestPath(x.name)
	data, f, err := b.readRequestFile(path)
	defer releaseRead(data) // what is decoded from it is a copy
	switch {
	case errors.Is(err, fs.ErrNotExist):
		b.settle(id)
		b.log(reviewlog.ForwardedRequesterGoneEntry{RequestID: id, RequestPath: path, Reason: "the request was removed while it waited for its turn"})
		b.release(x.name, dropped)
		return req, false
	case err != nil:
		b.settle(id)
		err = fmt.Errorf("reading request %s again for its turn: %w", id, err)
		b.log(reviewlog.ForwardingErrorEntry{RequestID: reviewlog.Str(id), Message: "Failed to read forwarded permission request", RequestPath: path, Error: err})
		b.report(err)
		b.release(x.name, retry)
		return req, false
	}
	digest := wire.RequestDigest(data)
	// The same bytes from another requester (a file removed and written
	// again by another member of the ask group) are not what was
	// admitted either.
	if digest == x.digest && f.uid == x.from.uid {
		if req, _, err = wire.DecodeRequest(data); err == nil && req.ID == id {
			return req, true
		}
	}
	p := f.parties(parties(x.req()))
	b.log(reviewlog.ForwardingWarningEntry{
		Message:   "a request was rewritten while it waited for its turn; refusing it",
		RequestID: reviewlog.Str(id), Parties: &p, RequestPath: path, Error: err,
	})
	b.report(fmt.Errorf("request %s: its file changed while it waited for its turn; refusing it", id))
	why := fmt.Sprintf("courier: request %s was rewritten while it waited for its turn; this one was not decided (write a new request with an id of its own)", id)
	b.release(x.name, b.answer(*x.req(), path, decision.NobodyAnswered(why), digest, false, f))
	return req, false
}

// concludeLater queues the conclusion of an escalated ask (writing its
// answer) for its requester's turn: a terminal or chain that answers a
// flood's asks at once does not make their writes jump the queue.
func (b *Broker) concludeLater(x *escalation, d decision.Decision) {
	b.fair.push(x.key, func() { b.conclude(x, d) })
}

// answer is finish, noting which request bytes the id was answered for,
// so that a different request reusing the id is told apart from the same
// request delivered again (reused).
func (b *Broker) answer(req wire.Request, path string, d decision.Decision, digest string, ruled bool, f from) outcome {
	o := b.finish(req, path, d, digest, ruled, f)
	b.mu.Lock()
	_, unwritten := b.unwritten[req.ID]
	if _, ok := b.answered[req.ID]; ok && !unwritten {
		if _, noted := b.answeredDigest[req.ID]; !noted {
			b.answeredDigest[req.ID] = digestKey(digest)
		}
	}
	b.mu.Unlock()
	return o
}

// digestKey is the first 64 bits of a request digest: enough to tell two
// requests under one id apart, at a quarter of the memory of the digest
// for every id answered in the last forwarding timeout.
func digestKey(digest string) uint64 {
	if len(digest) < 16 {
		return 0
	}
	k, _ := strconv.ParseUint(digest[:16], 16, 64)
	return k
}

// answeredWith reports whether id was answered in this run for the
// request bytes whose digest this is.
func (b *Broker) answeredWith(id, digest string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	k, ok := b.answeredDigest[id]
	return !ok || k == digestKey(digest)
}

// reused refuses a request whose id this broker already answered in this
// run for other request bytes: a child that reuses an id (a bug, or a
// subagent replaying another's) gets "unavailable" at once, with the
// reason logged, rather than waiting out its timeout for an answer that
// would never come. It is never decided: the first request's child may
// not have read its answer yet, and whatever is written at this id may be
// what it reads; a refusal is never an allow. (Across a restart nothing
// remembers the id, and answeredOnDisk lets the new request be decided on
// its own.)
func (b *Broker) reused(req wire.Request, name, digest string, f from) (outcome, string, job) {
	path := b.requestPath(name)
	p := f.parties(parties(&req))
	b.log(reviewlog.ForwardingWarningEntry{
		Message:   "a request reused the id of a different request answered in this session; refusing it",
		RequestID: reviewlog.Str(req.ID), Parties: &p, RequestPath: path,
	})
	b.report(fmt.Errorf("request %s: its id was already answered in this session for different request bytes; refusing it", req.ID))
	why := fmt.Sprintf("courier: request id %s was already answered in this session for a different request; this one was not decided (each request needs an id of its own)", req.ID)
	return queued, f.key(&req), b.answerJob(name, compact(req), decision.NobodyAnswered(why), digest, false, f)
}

// compact is what answering a request decided without a grant needs of
// it: its id, its parties and what it was about (cut to a few KiB, for the
// review entries: keptAsked), not its text or payload.
func compact(req wire.Request) wire.Request {
	c := wire.Request{
		ID: req.ID, CreatedAt: req.CreatedAt,
		RequesterSessionID: req.RequesterSessionID, TargetSessionID: req.TargetSessionID,
		RequesterAgentName: req.RequesterAgentName, RequesterPID: req.RequesterPID,
		Source: req.Source, Surface: req.Surface,
	}
	c.Value, c.AccessIntent = keptAsked(&req)
	return c
}

// slim is what answering an escalated ask needs of its request, a grant
// included: all but the child's prompt text and payload, which only the
// chain and the terminal read, and which may be a megabyte each.
func slim(req wire.Request) wire.Request {
	req.Message, req.Payload = "", nil
	return req
}
