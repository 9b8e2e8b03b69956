package natsforward

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/seed6639df8c/courier/decision"
	"github.com/seed6639df8c/courier/forward"
	"github.com/seed6639df8c/courier/natsbox"
	"github.com/seed6639df8c/courier/provenance"
	"github.com/seed6639df8c/courier/reviewlog"
	"github.com/seed6639df8c/courier/wire"
)

// servingChannel names the heartbeat over NATS in the review log, where
// the file child writes "heartbeat".
const servingChannel = "nats-kv"

// exchange is one ask on its way to the broker and back: the request's
// bytes and subjects, the digest the answer must be bound to, and what the
// wait has learned so far about the broker.
type exchange struct {
	c        *Client
	req      wire.Request
	timeout  time.Duration
	deadline time.Time

	reqSubj, respSubj, goneSubj, msgID string
	data                               []byte
	// digest is the SHA-256 of data: the answer must be bound to these
	// very bytes (wire.CheckBinding).
	digest string

	sub    *nats.Subscription
	msgs   chan *nats.Msg
	status chan nats.Status
	// published is set once the request may be in the engine: from then
	// on giving up tells the broker (gone).
	published bool

	// dropped is how many messages the subscription had dropped (a
	// slow consumer's) when last looked at; more since is a reason to
	// look for the kept answer.
	dropped int
	// lastLook is when the kept answer was last looked for; zero before
	// the first look.
	lastLook time.Time
	// lookFailed is set once a look for the kept answer failed and was
	// warned of: an engine that keeps failing is one line, not one a tick.
	lookFailed bool
	// unservedSince is when the broker was first seen not serving, zero
	// while it serves.
	unservedSince time.Time
	// refused holds the digests of the messages refused already, so that
	// a kept plant fetched again on every look is logged once; it holds
	// at most maxRefusalsLogged, and refusedMore is set once a refusal
	// beyond them was noted.
	refused     map[string]bool
	refusedMore bool
}

// maxRefusalsLogged bounds the refusals one ask logs (and remembers): a
// flood of distinct plants on the response subject, from anyone who may
// publish there, must grow neither the review log nor the child's memory
// without bound. Past it, one line says that more were refused.
const maxRefusalsLogged = 8

// open prepares the exchange: the subjects, the request's bytes, and the
// subscription to the answer, made before anything is published so the
// answer cannot come before the child listens. When the ask cannot even be
// published, open gives up and returns the decision and false.
func (x *exchange) open() (decision.Decision, bool) {
	c, req := x.c, &x.req
	target := req.TargetSessionID
	reqSubj, err1 := natsbox.RequestSubject(target, c.Owner, req.ID)
	respSubj, err2 := natsbox.ResponseSubject(target, c.Owner, req.ID)
	goneSubj, err3 := natsbox.GoneSubject(target, c.Owner, req.ID)
	msgID, err4 := natsbox.MsgID(target, c.Owner, req.ID)
	data, err5 := wire.EncodeRequest(*req)
	if err := errors.Join(err1, err2, err3, err4, err5); err != nil {
		c.log(reviewlog.ForwardingErrorEntry{RequestID: reviewlog.Str(req.ID), Message: "invalid request", Error: err})
		return x.abandon(forward.ReasonNotWritten), false
	}
	x.reqSubj, x.respSubj, x.goneSubj, x.msgID = reqSubj, respSubj, goneSubj, msgID
	x.data, x.digest = data, wire.RequestDigest(data)

	// Room for a burst: a message dropped as a slow consumer's is not
	// lost, since the kept answer is fetched on every liveness tick.
	x.msgs = make(chan *nats.Msg, 16)
	// Registered before the subscription, so a reconnect in between
	// still makes the wait look for the kept answer.
	x.status = c.Conn.StatusChanged(nats.CONNECTED)
	sub, err := c.Conn.ChanSubscribe(respSubj, x.msgs)
	if err != nil {
		c.log(reviewlog.ForwardingErrorEntry{
			RequestID: reviewlog.Str(req.ID), Message: msgNotSubscribed, ResponsePath: respSubj, Error: err,
		})
		return x.abandon(forward.ReasonNotWritten), false
	}
	x.sub = sub
	return decision.Decision{}, true
}

// msgNotSubscribed is the review log's message when the response
// subject could not be subscribed; the ask is then not published.
const msgNotSubscribed = "The forwarded permission response subject could not be subscribed"

// close ends the subscription and the status listener.
func (x *exchange) close() {
	if x.sub != nil {
		if err := x.sub.Unsubscribe(); err != nil && !errors.Is(err, nats.ErrConnectionClosed) {
			x.c.warn(fmt.Errorf("unsubscribing from %s: %w", x.respSubj, err))
		}
	}
	if x.status != nil {
		x.c.Conn.RemoveStatusListener(x.status)
	}
}

// opContext bounds one engine round trip: at least minOpTimeout or one
// liveness interval, never past the ask's deadline.
func (x *exchange) opContext(ctx context.Context) (context.Context, context.CancelFunc) {
	d := max(minOpTimeout, orDefault(x.c.LivenessInterval, DefaultLivenessInterval))
	at := time.Now().Add(d)
	if x.deadline.Before(at) {
		at = x.deadline
	}
	return context.WithDeadline(ctx, at)
}

// publish learns whether the broker binds its answers, then publishes the
// request and waits for the engine's acknowledgement. It returns the
// decision and false when the ask ended there.
func (x *exchange) publish(ctx context.Context) (decision.Decision, bool) {
	c, req, target := x.c, &x.req, x.req.TargetSessionID
	// No heartbeat is read for whether the broker binds its answers, as
	// package forward reads it: every broker over NATS is courier's
	// bridge, which publishes only bound answers (0029), so the answer
	// must always be bound (take). Reading it would also let a forged or
	// missing heartbeat make an unbound plant acceptable.
	if c.Log != nil {
		c.log(reviewlog.ForwardedRequestCreatedEntry{
			RequestID: req.ID, RequestSHA256: x.digest, RequesterAgentName: req.RequesterAgentName, RequesterSessionID: req.RequesterSessionID,
			TargetSessionID: target, RequestPath: x.reqSubj, ResponsePath: x.respSubj,
		})
	}
	x.published = true
	ackBy := time.Now().Add(publishAckTimeout)
	if x.deadline.Before(ackBy) {
		ackBy = x.deadline
	}
	pctx, cancel := context.WithDeadline(ctx, ackBy)
	defer cancel()
	// Whatever the outcome, the request may now be in the stream (an
	// acknowledgement lost on the way back): every way out below sends
	// gone (abandon), so that the broker withdraws it.
	err := x.publishUntil(pctx)
	switch {
	case err == nil:
		return decision.Decision{}, true
	case !time.Now().Before(x.deadline):
		// Before ctx: a caller's ctx that ends with the same timeout
		// (child hook's) is this deadline, not the session's end.
		return x.timedOut(), false
	case ctx.Err() != nil:
		return x.abandon(forward.ReasonSessionEnded), false
	}
	if errors.Is(err, context.DeadlineExceeded) {
		err = fmt.Errorf("%w: no acknowledgement from the engine within %s (is the %s stream there, and may this identity receive replies on its inbox prefix?)",
			err, publishAckTimeout, natsbox.StreamRequests)
	}
	c.log(reviewlog.ForwardingErrorEntry{RequestID: reviewlog.Str(req.ID), Message: forward.ReasonNotWritten, RequestPath: x.reqSubj, Error: err})
	c.warn(fmt.Errorf("publishing the request on %s: %w", x.reqSubj, err))
	return x.abandon(forward.ReasonNotWritten), false
}

// publishAttempt bounds one publish of the request: an acknowledgement
// lost with a dropped connection never comes, and the engine stores a
// publish again under the same Nats-Msg-Id once only, so publishing again
// is safe and spares the wait for the whole publishAckTimeout (a
// reconnecting child gave up "could not be written" after 5 s in the
// fault campaign).
const publishAttempt = time.Second

// publishUntil publishes the request until the engine acknowledges it or
// ctx ends, each attempt bounded by publishAttempt; the last error.
func (x *exchange) publishUntil(ctx context.Context) error {
	for {
		attempt, cancel := context.WithTimeout(ctx, publishAttempt)
		_, err := x.c.JS.PublishMsg(attempt, &nats.Msg{Subject: x.reqSubj, Data: x.data}, jetstream.WithMsgID(x.msgID), jetstream.WithExpectStream(natsbox.StreamRequests))
		cancel()
		if err == nil || ctx.Err() != nil || !lostOnTheWay(err) {
			return err
		}
		// Not tried again in a tight loop while the connection is
		// being made again.
		pause := time.NewTimer(publishRetryPause)
		select {
		case <-ctx.Done():
			pause.Stop()
			return err
		case <-pause.C:
		}
	}
}

// lostOnTheWay reports whether a publish failed for want of a connection
// or of an acknowledgement, which publishing again may mend; a refusal
// (no stream takes the subject, a permission) stands.
func lostOnTheWay(err error) bool {
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, nats.ErrTimeout) ||
		errors.Is(err, nats.ErrConnectionReconnecting) || errors.Is(err, nats.ErrDisconnected) ||
		errors.Is(err, nats.ErrStaleConnection)
}

// publishRetryPause spaces the attempts of publishUntil.
const publishRetryPause = 50 * time.Millisecond

// await waits for the answer until the deadline, ctx's end, or the broker
// not serving for the grace, and returns the decision: the answer's, or
// unavailable.
func (x *exchange) await(ctx context.Context) decision.Decision {
	c := x.c
	deadline := time.NewTimer(time.Until(x.deadline))
	defer deadline.Stop()
	// As in package forward, the broker's liveness is first judged one
	// interval into the wait: an answer that comes sooner proves it.
	liveness := time.NewTicker(orDefault(c.LivenessInterval, DefaultLivenessInterval))
	defer liveness.Stop()
	for {
		select {
		case m := <-x.msgs:
			if d, ok := x.take(ctx, m.Data); ok {
				return d
			}
		case <-x.status:
			// Reconnected: what was published meanwhile was not
			// delivered to the subscription, but the engine kept it.
			if d, ok := x.lookKept(ctx); ok {
				return d
			}
		case <-liveness.C:
			if x.lookDue() {
				if d, ok := x.lookKept(ctx); ok {
					return d
				}
			}
			if d, ended := x.judgeLiveness(ctx); ended {
				return d
			}
		case <-ctx.Done():
			if d, ok := x.drain(ctx); ok {
				return d
			}
			if !time.Now().Before(x.deadline) {
				// A caller's ctx that ends with the same timeout
				// (child hook's) ended with this deadline, which
				// select may pick second.
				return x.timedOut()
			}
			return x.abandon(forward.ReasonSessionEnded)
		case <-deadline.C:
			if d, ok := x.drain(ctx); ok {
				return d
			}
			return x.timedOut()
		}
	}
}

// drain takes an answer already delivered but not yet read, without
// waiting: one that came as the wait ended.
func (x *exchange) drain(ctx context.Context) (decision.Decision, bool) {
	for {
		select {
		case m := <-x.msgs:
			if d, ok := x.take(ctx, m.Data); ok {
				return d, true
			}
		default:
			return decision.Decision{}, false
		}
	}
}

// lookDue reports whether a liveness tick should also look for the kept
// answer. The subscription delivers the answer; the look is for one it
// did not: at the first tick (an answer published on a cluster node the
// subscription's interest had not reached yet), when the subscription
// dropped messages since the last look (a slow consumer's: a flood on
// the subject), and then every KeptLookInterval as a safety net.
// Reconnects look by themselves (await). Looking on every tick cost the
// engine a request per waiting ask per tick, for nothing while connected.
func (x *exchange) lookDue() bool {
	if x.sub != nil {
		if n, err := x.sub.Dropped(); err == nil && n > x.dropped {
			x.dropped = n
			return true
		}
	}
	return x.lastLook.IsZero() || time.Since(x.lastLook) >= orDefault(x.c.KeptLookInterval, DefaultKeptLookInterval)
}

// lookKept fetches the answer the engine keeps on the response subject
// (one direct get), for one published while this child was not listening.
// Nothing is asked of an engine this child is not connected to: the
// request would only wait in the reconnect buffer.
func (x *exchange) lookKept(ctx context.Context) (decision.Decision, bool) {
	if !x.c.Conn.IsConnected() {
		return decision.Decision{}, false
	}
	x.lastLook = time.Now()
	octx, cancel := x.opContext(ctx)
	defer cancel()
	data, ok, err := natsbox.LastResponse(octx, x.c.JS, x.respSubj)
	if err != nil {
		if ctx.Err() == nil && !x.lookFailed {
			x.lookFailed = true
			x.c.warn(fmt.Errorf("looking for the kept answer on %s (further failures of this ask not shown): %w", x.respSubj, err))
		}
		return decision.Decision{}, false
	}
	if !ok {
		return decision.Decision{}, false
	}
	return x.take(ctx, data)
}

// judgeLiveness reads the broker's heartbeat. It returns true, with the
// decision, when the exchange is over: the broker has not served for the
// grace (unavailable), unless an answer came in as the grace ran out. A
// heartbeat that cannot be read (no connection, an engine error) is not
// held against the broker, as package forward holds no read error against
// a parent: the answer, kept by the engine, is fetched once the child is
// back, and the timeout bounds the wait.
func (x *exchange) judgeLiveness(ctx context.Context) (decision.Decision, bool) {
	c, target := x.c, x.req.TargetSessionID
	if !c.Conn.IsConnected() {
		return decision.Decision{}, false
	}
	octx, cancel := x.opContext(ctx)
	s, err := natsbox.ReadServing(octx, c.JS, target, c.now())
	cancel()
	if err != nil || s.Alive {
		x.unservedSince = time.Time{}
		return decision.Decision{}, false
	}
	if x.unservedSince.IsZero() {
		x.unservedSince = c.now()
	}
	if c.now().Sub(x.unservedSince) < orDefault(c.Grace, forward.DefaultGrace) {
		return decision.Decision{}, false
	}
	if d, ok := x.drain(ctx); ok {
		return d, true
	}
	reason := forward.NotServingReason(target)
	state := s.Why
	if state == "" {
		state = "absent"
	}
	c.log(reviewlog.ForwardedNoServingSessionEntry{
		RequestID: x.req.ID, RequestSHA256: x.digest, RequesterSessionID: x.req.RequesterSessionID, TargetSessionID: target,
		ServingChannel: servingChannel, ServingState: state, ServingSessionIDs: []string{},
		DecidedBy: provenance.Unavailable{Reason: reason},
	})
	return x.abandon(reason), true
}

// take judges one message from the response subject. It returns the
// decision and true when it is the answer: decoded, and bound to this
// request's id and bytes. The binding is always required: every broker
// over NATS binds its answers (see publish). Anything else is refused,
// logged once, and the wait goes on: over NATS nothing says the broker
// has answered already, so a refusal is never final (the timeout is).
func (x *exchange) take(_ context.Context, data []byte) (decision.Decision, bool) {
	c, req := x.c, &x.req
	resp, dropped, err := wire.DecodeResponse(data)
	if err == nil {
		err = wire.CheckBinding(resp, req.ID, x.digest, true)
	}
	if err != nil {
		x.refuse(data, err)
		return decision.Decision{}, false
	}
	for _, d := range dropped {
		c.warn(fmt.Errorf("response on %s: dropped %w", x.respSubj, d))
	}
	d := decision.FromResponse(resp)
	if c.Log != nil {
		c.log(reviewlog.ForwardedResponseReceivedEntry{
			RequestID: req.ID, RequestSHA256: x.digest, TargetSessionID: req.TargetSessionID, ResponsePath: x.respSubj,
			Approved: resp.Approved, State: string(resp.State), DenialReason: resp.DenialReason,
			ResponderSessionID: resp.ResponderSessionID, DecidedBy: d.DecidedBy,
		})
	}
	c.log(forward.TerminalEntry(req.ID, d))
	return d, true
}

// refuse logs a refused message once per distinct message, for at most
// maxRefusalsLogged of them, then once that more were refused.
func (x *exchange) refuse(data []byte, err error) {
	c, req := x.c, &x.req
	sum := wire.RequestDigest(data)
	if x.refused[sum] {
		return
	}
	if len(x.refused) >= maxRefusalsLogged {
		if !x.refusedMore {
			x.refusedMore = true
			c.log(reviewlog.ForwardingWarningEntry{
				RequestID: reviewlog.Str(req.ID), Message: "Refused more forwarded permission responses; no more are logged for this ask",
				ResponsePath: x.respSubj, Error: err,
			})
			c.warn(fmt.Errorf("refused more than %d messages on %s; no more are shown: %w", maxRefusalsLogged, x.respSubj, err))
		}
		return
	}
	if x.refused == nil {
		x.refused = make(map[string]bool)
	}
	x.refused[sum] = true
	c.log(reviewlog.ForwardingWarningEntry{
		RequestID: reviewlog.Str(req.ID), Message: "Refused a forwarded permission response; waiting for the parent's own answer",
		ResponsePath: x.respSubj, Error: err,
	})
	c.warn(fmt.Errorf("refused a message on %s, waiting for the parent's own answer: %w", x.respSubj, err))
}

// timedOut gives up on an ask nobody answered within the timeout.
func (x *exchange) timedOut() decision.Decision {
	c, req, target := x.c, &x.req, x.req.TargetSessionID
	c.log(reviewlog.ForwardingWarningEntry{RequestID: reviewlog.Str(req.ID), Message: fmt.Sprintf("Timed out waiting for forwarded permission response '%s'", x.respSubj)})
	reason := forward.NoAnswerReason(target, x.timeout)
	c.log(reviewlog.ForwardedResponseTimedOutEntry{
		RequestID: req.ID, RequestSHA256: x.digest, RequesterAgentName: req.RequesterAgentName, TargetSessionID: target,
		ResponsePath: x.respSubj, DecidedBy: provenance.Unavailable{Reason: reason},
	})
	return x.abandon(reason)
}

// abandon gives up on the ask: once it may have been published, the
// broker is told on the gone subject so that it withdraws it (nobody is
// prompted for an ask nobody waits for), and the decision is unavailable.
func (x *exchange) abandon(reason string) decision.Decision {
	c := x.c
	if x.published {
		x.published = false
		// Flushed only when connected: a disconnected flush waits its
		// whole timeout, and the broker withdraws an ask nobody withdrew
		// at its own forwarding timeout anyway.
		err := c.Conn.Publish(x.goneSubj, nil)
		if err == nil && c.Conn.IsConnected() {
			err = c.Conn.FlushTimeout(goneFlushTimeout)
		}
		if err != nil {
			c.warn(fmt.Errorf("telling the broker on %s that the ask is given up: %w", x.goneSubj, err))
		}
	}
	d := decision.NobodyAnswered(reason)
	c.log(forward.TerminalEntry(x.req.ID, d))
	return d
}
