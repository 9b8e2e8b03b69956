package forward

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"time"

	"golang.org/x/sys/unix"

	"github.com/seed6639df8c/courier/decision"
	"github.com/seed6639df8c/courier/mailbox"
	"github.com/seed6639df8c/courier/provenance"
	"github.com/seed6639df8c/courier/reviewlog"
	"github.com/seed6639df8c/courier/wire"
)

// exchange is one ask on its way to the parent and back: the request and
// its bytes, where it and its answer live, the digest the answer must be
// bound to, the wait for the answer, and what the wait has learned so far
// about the parent and about the file at the answer's path. Forward drives
// it: open, write, await; await judges the parent's liveness and collects
// the answer, or abandons the ask.
type exchange struct {
	c                 *Client
	req               wire.Request
	reqPath, respPath string
	data              []byte
	// digest is the SHA-256 of data: the answer must be bound to these
	// very bytes (wire.CheckBinding).
	digest string
	wait   *responseWait

	// insist is set once the parent's heartbeat announced that it binds
	// every answer; from then on an unbound answer is refused. Sticky: a
	// record rewritten without it later does not lower the bar.
	insist bool
	// unservedSince is when the parent was first seen not serving, zero
	// while it serves.
	unservedSince time.Time

	// A refused file (see collect) is read again only once something
	// changed: another file is there (stamp), or the request is gone;
	// recheck ticks while one is refused.
	refused bool
	recheck *time.Ticker
	stamp   fileStamp

	// waitedLong says Client.OnLongWait was called for this ask.
	waitedLong bool
}

// longWait calls Client.OnLongWait, once: the answer is not a quick one.
func (x *exchange) longWait() {
	if x.waitedLong || x.c.OnLongWait == nil {
		return
	}
	x.waitedLong = true
	x.c.OnLongWait()
}

// open prepares the exchange: the request's paths and bytes, and the wait
// for its answer, armed before the request exists so the answer cannot
// slip past. When the ask cannot even be written, open abandons it and
// returns the decision and false.
func (x *exchange) open(ctx context.Context) (decision.Decision, bool) {
	c, req := x.c, &x.req
	target := req.TargetSessionID
	reqPath, err1 := c.Layout.RequestPath(target, req.ID)
	respPath, err2 := c.Layout.ResponsePath(target, req.ID)
	data, err3 := wire.EncodeRequest(*req)
	if err := errors.Join(err1, err2, err3); err != nil {
		c.log(reviewlog.ForwardingErrorEntry{RequestID: reviewlog.Str(req.ID), Message: "invalid request", Error: err})
		return c.abandon(*req, "", ReasonNotWritten), false
	}
	x.reqPath, x.respPath, x.data, x.digest = reqPath, respPath, data, wire.RequestDigest(data)

	if c.PollFirst <= 0 {
		if d, ok := x.arm(ctx, false); !ok {
			return d, false
		}
	} else if err := c.Layout.EnsureInbox(target); err != nil {
		// With PollFirst the wait is armed only if the first look finds
		// no answer (await), but the inbox is made here all the same, so
		// that failing to make it is reported as it is without.
		return c.abandon(*req, "", c.inboxFailure(req.ID, target, err)), false
	}

	// Whether the parent binds is read before the request is published (a
	// courier parent announces it even when its liveness is not judged,
	// --no-heartbeat): learned only when an unbound answer arrives, it
	// would let a plant that came first, or a record withdrawn by a
	// restart in between, decide the ask. It matters only for an answer
	// that carries no binding (a bound one is checked field for field
	// either way), so an unbound answer asks again if it is not known yet
	// (insisting).
	if s, err := c.Layout.CheckServing(target, c.now()); err == nil {
		x.learnBinding(s)
	}
	return decision.Decision{}, true
}

// close ends the wait and the recheck of a refused file.
func (x *exchange) close() {
	if x.recheck != nil {
		x.recheck.Stop()
	}
	if x.wait != nil {
		x.wait.stop()
	}
}

// write publishes the request in the parent's inbox. It returns why the
// request was not written, "" when it was; the caller then abandons the
// ask with that reason.
func (x *exchange) write() string {
	c, req, target := x.c, &x.req, x.req.TargetSessionID
	if c.Log != nil {
		c.log(reviewlog.ForwardedRequestCreatedEntry{
			RequestID: req.ID, RequestSHA256: x.digest, RequesterAgentName: req.RequesterAgentName, RequesterSessionID: req.RequesterSessionID,
			TargetSessionID: target, RequestPath: x.reqPath, ResponsePath: x.respPath,
		})
	}
	err := c.Layout.WriteRequest(target, req.ID, x.data)
	if errors.Is(err, fs.ErrNotExist) {
		// The shared watch found responses/ but requests/ is gone: an
		// inbox cleaned up under us. Ensure it and retry, as pi does
		// (once: in the isolation mode EnsureInbox only looks, and an
		// inbox its broker removed is not coming back for this ask).
		if err = c.Layout.EnsureInbox(target); err != nil {
			return c.inboxFailure(req.ID, target, err)
		}
		if x.wait != nil {
			x.wait.rearm()
		}
		err = c.Layout.WriteRequest(target, req.ID, x.data)
	}
	if err != nil {
		c.log(reviewlog.ForwardingErrorEntry{RequestID: reviewlog.Str(req.ID), Message: ReasonNotWritten, Error: err})
		return ReasonNotWritten
	}
	// The shared watch signals what arrives from now on. A file that was
	// there before the request cannot answer it (a broker answers what it
	// read); should it be a plant, the watch's rescan finds and refuses it
	// within RescanInterval, and the broker's answer renamed over it wakes
	// the wait at once.
	return ""
}

// await waits for the answer to the written request, until the Timeout,
// ctx's end, or the parent not serving for Grace, and returns the
// decision: the answer's, or unavailable.
func (x *exchange) await(ctx context.Context) decision.Decision {
	c := x.c
	timeout := orDefault(c.Timeout, DefaultTimeout)
	wait := timeout
	if !c.Deadline.IsZero() {
		wait = min(wait, time.Until(c.Deadline))
	}
	deadline := time.NewTimer(wait)
	defer deadline.Stop()
	// The parent's liveness is first judged one LivenessInterval into the
	// wait: an answer that comes sooner proves a serving parent, and most
	// do. (Whether it binds its answers was read before the request was
	// written: open.)
	var liveness <-chan time.Time
	if !c.NoHeartbeat {
		t := time.NewTicker(orDefault(c.LivenessInterval, DefaultLivenessInterval))
		defer t.Stop()
		liveness = t.C
	}
	if x.wait == nil {
		// PollFirst: look without a watch first, then arm one.
		if d, ok := x.pollFirst(ctx, min(c.PollFirst, wait)); ok {
			return d
		}
		x.longWait()
		if d, goOn := x.armLate(ctx); !goOn {
			return d
		}
	}
	x.longWait()

	for {
		var pending <-chan struct{}
		if !x.refused {
			pending = x.wait.signal()
		}
		select {
		case <-pending:
			if x.wait.woken(ctx) {
				if d, ok := x.answer(); ok {
					return d
				}
			}
		case <-x.recheckC():
			if d, ok := x.answerIfWorthReading(); ok {
				return d
			}
		case <-ctx.Done():
			if d, ok := x.answerIfWorthReading(); ok {
				return d
			}
			if !c.Deadline.IsZero() && !time.Now().Before(c.Deadline) {
				// The caller's ctx ended with this ask's deadline,
				// which select may have picked second.
				return x.timedOut(timeout)
			}
			return x.abandon(ReasonSessionEnded)
		case <-deadline.C:
			if d, ok := x.answerIfWorthReading(); ok {
				return d
			}
			return x.timedOut(timeout)
		case <-liveness:
			if d, ended := x.judgeLiveness(); ended {
				return d
			}
		}
	}
}

// learnBinding takes in what the parent's heartbeat says about binding
// (see insist).
func (x *exchange) learnBinding(s mailbox.Serving) {
	if s.State == mailbox.ServingAlive && s.Heartbeat.ResponseBinding == wire.BindingSHA256 {
		x.insist = true
	}
}

// insisting reports whether an unbound answer is refused, reading the
// heartbeat again while the parent has not announced bound answers yet.
func (x *exchange) insisting() bool {
	if !x.insist {
		if s, err := x.c.Layout.CheckServing(x.req.TargetSessionID, x.c.now()); err == nil {
			x.learnBinding(s)
		}
	}
	return x.insist
}

// judgeLiveness reads the parent's heartbeat. It returns true, with the
// decision, when the exchange is over: the parent has not served for
// Grace (unavailable), unless an answer came in as the grace ran out.
func (x *exchange) judgeLiveness() (decision.Decision, bool) {
	c, target := x.c, x.req.TargetSessionID
	s, err := c.Layout.CheckServing(target, c.now())
	x.learnBinding(s)
	if err != nil || s.State == mailbox.ServingAlive {
		x.unservedSince = time.Time{}
		return decision.Decision{}, false
	}
	if x.unservedSince.IsZero() {
		x.unservedSince = c.now()
	}
	if c.now().Sub(x.unservedSince) < orDefault(c.Grace, DefaultGrace) {
		return decision.Decision{}, false
	}
	if !x.refused && exists(x.respPath) {
		// An answer came in as the grace ran out: take it.
		return x.answer()
	}
	reason := fmt.Sprintf(reasonNotServingFmt, target)
	c.log(reviewlog.ForwardedNoServingSessionEntry{
		RequestID: x.req.ID, RequestSHA256: x.digest, RequesterSessionID: x.req.RequesterSessionID, TargetSessionID: target,
		ServingChannel: "heartbeat", ServingState: s.State.String(), ServingSessionIDs: []string{},
		DecidedBy: provenance.Unavailable{Reason: reason},
	})
	return x.abandon(reason), true
}

// answer collects the file at the answer's path. It returns the decision
// and true when that is the answer; a refused file starts the recheck.
func (x *exchange) answer() (decision.Decision, bool) {
	// The stamp of the file about to be read, taken before reading it: a
	// stamp taken after the refusal could be that of the parent's answer,
	// renamed over the refused file meanwhile, which would then never be
	// read (TestForwardRereadsAnAnswerThatReplacedTheRefusedPlant).
	before := stampOf(x.respPath)
	// Before the wait is armed (PollFirst), a missing file is looked for
	// again, as a repeating signal would.
	d, got := x.collect(x.wait == nil || x.wait.repeats())
	if got == gotRefused {
		x.refused, x.stamp = true, before
		if x.recheck == nil {
			x.recheck = time.NewTicker(orDefault(x.c.LivenessInterval, DefaultLivenessInterval))
		}
	}
	return d, got == gotAnswer
}

// answerIfWorthReading is answer, when the file at the answer's path is worth
// reading: there is one and none was refused, or the refused one was
// replaced, or the request is gone (the broker answered).
func (x *exchange) answerIfWorthReading() (decision.Decision, bool) {
	if !x.worthReading() {
		return decision.Decision{}, false
	}
	return x.answer()
}

func (x *exchange) worthReading() bool {
	if !x.refused {
		return exists(x.respPath)
	}
	if stampOf(x.respPath) != x.stamp {
		return true
	}
	_, err := os.Lstat(x.reqPath)
	return errors.Is(err, os.ErrNotExist)
}

// recheckC ticks while a refused file waits to be read again; nil before.
func (x *exchange) recheckC() <-chan time.Time {
	if x.recheck == nil {
		return nil
	}
	return x.recheck.C
}

// timedOut gives up on an ask nobody answered within timeout.
func (x *exchange) timedOut(timeout time.Duration) decision.Decision {
	c, req, target := x.c, &x.req, x.req.TargetSessionID
	c.log(reviewlog.ForwardingWarningEntry{RequestID: reviewlog.Str(req.ID), Message: fmt.Sprintf("Timed out waiting for forwarded permission response '%s'", x.respPath)})
	reason := fmt.Sprintf(reasonNoAnswerFormat, target, seconds(timeout))
	c.log(reviewlog.ForwardedResponseTimedOutEntry{
		RequestID: req.ID, RequestSHA256: x.digest, RequesterAgentName: req.RequesterAgentName, TargetSessionID: target,
		ResponsePath: x.respPath, DecidedBy: provenance.Unavailable{Reason: reason},
	})
	return x.abandon(reason)
}

// abandon gives up on the written request (Client.abandon).
func (x *exchange) abandon(reason string) decision.Decision {
	return x.c.abandon(x.req, x.reqPath, reason)
}

// What collect made of the file at the answer's path.
type collected int

const (
	gotAnswer  collected = iota // the decision is final
	gotNothing                  // no file there (yet): keep waiting
	gotRefused                  // not the answer, and the request is still there
)

// collect reads the answer at respPath and nests the responder's decider.
// Once it accepts an answer it deletes the request, then the response: in
// that order, a broker restarted in between never finds the request
// without its answer, which it would answer a second time.
//
// A file is refused when it cannot be read or decoded, or when it does not
// answer this request (wire.CheckBinding; insisting once the parent's
// heartbeat announced bound answers). While the request is still on disk
// nobody has answered it, so a refused file is a plant or another
// request's answer: collect returns gotRefused, and the caller waits for
// the broker to write its answer over it. Once the request is gone the
// broker has answered (it writes before it removes): the file is read once
// more, and a refusal then is final: unavailable, as pi's unreadable answer.
//
// With waitAbsent, no file at all while the request is on disk is
// gotNothing, not a refusal: the caller's watch will say when one comes.
func (x *exchange) collect(waitAbsent bool) (d decision.Decision, got collected) {
	c, req, reqPath, respPath := x.c, &x.req, x.reqPath, x.respPath
	target := req.TargetSessionID
	resp, dropped, readErr := x.read()
	if readErr != nil {
		if _, err := os.Lstat(reqPath); err == nil {
			if waitAbsent && errors.Is(readErr, fs.ErrNotExist) {
				return decision.Decision{}, gotNothing
			}
			c.log(reviewlog.ForwardingWarningEntry{
				RequestID: reviewlog.Str(req.ID), Message: "Refused a forwarded permission response; waiting for the parent's own answer",
				ResponsePath: respPath, Error: readErr,
			})
			c.warn(fmt.Errorf("refused %s, waiting for the parent's own answer: %w", respPath, readErr))
			return decision.Decision{}, gotRefused
		}
		resp, dropped, readErr = x.read()
	}
	c.discard(reqPath)
	if !c.Layout.Isolated() {
		// In the isolation mode responses/ is the broker's, which
		// removes the answer itself (after the forwarding timeout): the
		// child could not, and trying would only warn.
		c.discard(respPath)
	}
	// The inbox directories stay: a live broker watches them, and removing
	// requests/ would cost its next child a re-arm of that watch. pi's
	// cleanup order applies when the parent is gone (see abandon).
	for _, d := range dropped {
		c.warn(fmt.Errorf("response %s: dropped %w", respPath, d))
	}
	if readErr != nil {
		c.log(reviewlog.ForwardedResponseReceivedEntry{
			RequestID: req.ID, RequestSHA256: x.digest, TargetSessionID: target, ResponsePath: respPath, Error: readErr,
		})
		reason := ReasonUnreadable
		if errors.Is(readErr, wire.ErrForeignResponse) || errors.Is(readErr, wire.ErrUnboundResponse) {
			reason = ReasonNotBound
		}
		d := decision.NobodyAnswered(reason)
		c.logFinal(req.ID, d)
		return d, gotAnswer
	}
	d = decision.FromResponse(resp)
	if c.Log != nil {
		c.log(reviewlog.ForwardedResponseReceivedEntry{
			RequestID: req.ID, RequestSHA256: x.digest, TargetSessionID: target, ResponsePath: respPath,
			Approved: resp.Approved, State: string(resp.State), DenialReason: resp.DenialReason,
			ResponderSessionID: resp.ResponderSessionID, DecidedBy: d.DecidedBy,
		})
	}
	c.logFinal(req.ID, d)
	return d, gotAnswer
}

// read reads, decodes and checks the binding of the file at respPath.
// insisting is asked only about an answer that carries no binding.
func (x *exchange) read() (wire.Response, []*wire.FieldError, error) {
	// Only the broker's user writes answers: in the isolation mode a
	// file another uid owns (the asker's own included) is a plant,
	// refused as any unsafe file is.
	data, err := mailbox.ReadFileOf(x.respPath, x.c.Layout.BrokerOwner())
	if err != nil {
		return wire.Response{}, nil, err
	}
	resp, dropped, err := wire.DecodeResponse(data)
	if err != nil {
		return wire.Response{}, nil, err
	}
	if err := wire.CheckBinding(resp, x.req.ID, x.digest, !resp.Bound() && x.insisting()); err != nil {
		return wire.Response{}, nil, err
	}
	return resp, dropped, nil
}

// fileStamp tells one file at a path from a later one: a refused answer
// is read again only when the stamp changes.
type fileStamp struct {
	exists     bool
	dev, ino   uint64
	ctim, size int64
}

func stampOf(path string) fileStamp {
	var st unix.Stat_t
	if err := unix.Lstat(path, &st); err != nil {
		return fileStamp{}
	}
	return fileStamp{exists: true, dev: uint64(st.Dev), ino: st.Ino, ctim: st.Ctim.Nano(), size: st.Size}
}
