package natsbridge

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/seed6639df8c/courier/decision"
	"github.com/seed6639df8c/courier/mailbox"
	"github.com/seed6639df8c/courier/natsbox"
	"github.com/seed6639df8c/courier/reviewlog"
	"github.com/seed6639df8c/courier/wire"
)

// intake fetches request messages while there is room, until ctx ends or
// StopIntake is closed. The messages that arrived together are written
// first, then made durable with one flush of the directories, then acked:
// a burst costs one flush, a lone ask one.
func (b *Bridge) intake(ctx context.Context, cons jetstream.Consumer, holder string) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if stop := b.StopIntake; stop != nil {
		go func() {
			select {
			case <-stop:
				cancel()
			case <-ctx.Done():
			}
		}()
	}
	for ctx.Err() == nil {
		room := b.room()
		if room <= 0 {
			// Full: the stream holds the rest until an answer frees a
			// place (or a second passes, for a marker the sweep drops).
			t := time.NewTimer(time.Second)
			select {
			case <-ctx.Done():
			case <-b.freed:
			case <-t.C:
			}
			t.Stop()
			continue
		}
		fetch, cancelFetch := context.WithTimeout(ctx, fetchWait)
		batch, err := cons.Fetch(min(room, b.batch()), jetstream.FetchContext(fetch))
		if err == nil {
			b.takeBatch(ctx, batch)
			err = batch.Error()
		}
		cancelFetch()
		switch {
		case err == nil, ctx.Err() != nil, errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled), errors.Is(err, jetstream.ErrNoMessages):
		case errors.Is(err, jetstream.ErrConsumerNotFound), errors.Is(err, jetstream.ErrConsumerDeleted):
			// The engine lost the consumer (a store that was wiped,
			// an operator's delete): make it again.
			if who, ok := leaseHolder(ctx, b.JS, b.session); !ok || who != holder {
				// Another broker took the session and made the
				// consumer anew for itself, under the same name:
				// making it again, or fetching from it, would take
				// that broker's asks into this one, whose lease is
				// lost and which stops at its next renewal. Its
				// intake ends here.
				b.report(fmt.Errorf("nats bridge: fetching requests: %w; the session's lease is not this broker's (held as %q): taking no more requests", err, who))
				return
			}
			b.report(fmt.Errorf("nats bridge: fetching requests: %w; creating the consumer again", err))
			if again, cerr := b.consumer(ctx); cerr == nil {
				cons = again
			} else {
				b.report(fmt.Errorf("nats bridge: %w", cerr))
				sleep(ctx, time.Second)
			}
		default:
			b.report(fmt.Errorf("nats bridge: fetching requests: %w", err))
			sleep(ctx, time.Second)
		}
	}
}

// takeBatch handles the messages of one fetch as they arrive. Whenever
// none is waiting, what was written is flushed to disk and the messages
// handled since the last flush are acked.
func (b *Bridge) takeBatch(ctx context.Context, batch jetstream.MessageBatch) {
	var toAck []jetstream.Msg
	dirty := false
	flush := func() {
		if dirty {
			if err := b.syncDirs(); err != nil {
				// Not durable: no ack, the engine delivers them again
				// and the markers make that a no-op.
				b.report(fmt.Errorf("nats bridge: %w", err))
				toAck, dirty = toAck[:0], false
				return
			}
		}
		for _, msg := range toAck {
			b.ack(ctx, msg)
		}
		toAck, dirty = toAck[:0], false
	}
	msgs := batch.Messages()
	for msg := range msgs {
		if b.deferOwner(msg) {
			if len(msgs) == 0 {
				flush()
			}
			continue
		}
		ack, wrote := b.handle(ctx, msg.Subject(), msg.Data(), msg.NakWithDelay)
		dirty = dirty || wrote
		if ack {
			toAck = append(toAck, msg)
		}
		if len(msgs) == 0 {
			flush()
		}
	}
	flush()
}

// syncDirs makes the renames of the markers and request files written
// since the last call durable: the engine forgets a message once acked,
// and the inbox is then its only copy, also across a power cut (unlike a
// file child's, whose own machine loses it with the request).
func (b *Bridge) syncDirs() error {
	requests, err := b.Layout.RequestsDir(b.session)
	if err != nil {
		return err
	}
	for _, dir := range []string{b.marks.dir, requests} {
		if err := syncDir(dir); err != nil {
			return err
		}
	}
	return nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("flushing %s: %w", dir, err)
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("flushing %s: %w", dir, err)
	}
	return nil
}

// sleep waits d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// deferOwner sends a message back to the stream, for later, when its
// owner already has its share of asks bridged and unanswered
// (MaxInFlightPerOwner): the bridge reads on to the other owners' asks.
// The delay doubles with each delivery, up to ownerDelayMax, so that a
// large flood costs the engine a bounded rate of redeliveries. Only the
// owner is looked at: the message is judged when it is taken.
func (b *Bridge) deferOwner(msg jetstream.Msg) bool {
	_, _, owner, _, err := natsbox.ParseSubject(msg.Subject())
	if err != nil {
		return false
	}
	b.mu.Lock()
	full := b.owned[owner] >= b.maxInFlightPerOwner()
	b.mu.Unlock()
	if !full {
		return false
	}
	delay := ownerDelayFirst
	if md, err := msg.Metadata(); err == nil && md.NumDelivered > 1 {
		delay <<= min(md.NumDelivered-1, 3)
	}
	if err := msg.NakWithDelay(min(delay, ownerDelayMax)); err != nil {
		// Not deferred: the engine delivers it again after AckWait.
		b.report(fmt.Errorf("nats bridge: deferring %s: %w", msg.Subject(), err))
	}
	return true
}

// The delays of deferOwner.
const (
	ownerDelayFirst = time.Second
	ownerDelayMax   = 8 * time.Second
)

// mark records m as bridged and unanswered; b.mu held.
func (b *Bridge) mark(m *marker) {
	b.unmark(m.RequestID)
	b.byID[m.RequestID] = m
	b.owned[m.Owner]++
}

// unmark drops id's record; b.mu held.
func (b *Bridge) unmark(id string) {
	prior, ok := b.byID[id]
	if !ok {
		return
	}
	delete(b.byID, id)
	if b.owned[prior.Owner]--; b.owned[prior.Owner] <= 0 {
		delete(b.owned, prior.Owner)
	}
}

func (b *Bridge) room() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.maxInFlight() - len(b.byID)
}

// refusal is why a request message is not served, with what is known of
// it; answer says an unavailable answer bound to it can be published.
type refusal struct {
	reason string
	owner  string
	req    *wire.Request
	digest string
	answer bool
}

// handle judges one request message and, when it is to be served,
// writes its marker and request file: it reports whether to ack the
// message, and whether it wrote. A message that could not be written (a
// full disk) is not acked: nak asks the engine to deliver it again after
// a delay.
func (b *Bridge) handle(ctx context.Context, subject string, data []byte, nak func(time.Duration) error) (ack, wrote bool) {
	b.takes.Add(1)
	r, m, err := b.check(ctx, subject, data)
	switch {
	case err != nil:
		// Not judged (the engine did not say whether an answer is
		// kept): delivered again later, never bridged on a guess.
		b.report(fmt.Errorf("nats bridge: %s: %w", subject, err))
		b.nakLater(subject, nak)
		return false, false
	case r != nil:
		b.refuse(ctx, subject, r)
	case m == nil:
		// Delivered again: the answer is kept, or on its way.
	default:
		if err := b.bridge(m, data); err != nil {
			b.log(reviewlog.ForwardingErrorEntry{Message: "Failed to bridge a request from NATS into the inbox", RequestID: reviewlog.Str(m.RequestID), Error: err})
			b.report(fmt.Errorf("nats bridge: %s: %w", subject, err))
			b.nakLater(subject, nak)
			return false, false
		}
		b.log(reviewlog.NATSRequestBridgedEntry{RequestID: m.RequestID, Owner: m.Owner, Subject: subject, RequestSHA256: m.RequestSHA256})
		if b.afterWrite != nil && !b.afterWrite(m.RequestID) {
			return false, true
		}
		return true, true
	}
	return true, false
}

// nakLater asks the engine to deliver a message again in a second.
func (b *Bridge) nakLater(subject string, nak func(time.Duration) error) {
	if nak == nil {
		return
	}
	if err := nak(time.Second); err != nil {
		b.report(fmt.Errorf("nats bridge: %s: %w", subject, err))
	}
}

func (b *Bridge) ack(ctx context.Context, msg jetstream.Msg) {
	// A lost ack costs a redelivery, which is deduplicated.
	if err := msg.Ack(); err != nil && ctx.Err() == nil {
		b.report(fmt.Errorf("nats bridge: acking %s: %w", msg.Subject(), err))
	}
}

// check judges one request message: a refusal, or nil and the marker to
// bridge it with, or neither for a duplicate (acked, nothing else); an
// error when it cannot judge now.
func (b *Bridge) check(ctx context.Context, subject string, data []byte) (*refusal, *marker, error) {
	kind, sessionTok, owner, idTok, err := natsbox.ParseSubject(subject)
	if err != nil || kind != natsbox.KindRequest {
		return &refusal{reason: fmt.Sprintf("not a request subject: %v", err)}, nil, nil
	}
	if want, _ := natsbox.Token(b.session); sessionTok != want {
		return &refusal{reason: fmt.Sprintf("its session token %q is not this session's (%q)", sessionTok, want)}, nil, nil
	}
	if err := natsbox.CheckOwner(owner); err != nil {
		return &refusal{reason: fmt.Sprintf("owner: %v", err)}, nil, nil
	}
	if len(data) > natsbox.MaxMsgSize {
		// The engine's MaxMsgSize keeps these out; a stream configured
		// otherwise by hand must not make the broker write them.
		return &refusal{reason: fmt.Sprintf("its body of %d bytes is over %d", len(data), natsbox.MaxMsgSize), owner: owner}, nil, nil
	}
	req, _, err := wire.DecodeRequest(data)
	if err != nil {
		return &refusal{reason: fmt.Sprintf("its body is not a request: %v", err), owner: owner}, nil, nil
	}
	r := &refusal{owner: owner, req: &req, digest: wire.RequestDigest(data)}
	if tok, err := natsbox.Token(req.ID); err != nil || tok != idTok {
		r.reason = fmt.Sprintf("its id %q is not the subject's (%q)", req.ID, idTok)
		return r, nil, nil
	}
	respSubject, err := natsbox.ResponseSubject(b.session, owner, req.ID)
	if err != nil {
		r.reason = fmt.Sprintf("no response subject: %v", err)
		return r, nil, nil
	}
	// Bridged before and not answered yet (its marker, and its request
	// or response in the inbox): a redelivery. Looked at before the kept
	// answer, never after: an answer is published before its files and
	// marker are removed, so an ask found neither here nor kept below
	// has no answer on its way (looked at in the other order, an answer
	// published in between made it look new, and serve answered twice).
	b.mu.Lock()
	prior := b.byID[req.ID]
	b.mu.Unlock()
	inInbox := b.inInbox(req.ID)
	if prior != nil && prior.Owner == owner && inInbox {
		return nil, nil, nil
	}
	// Answered before (the answer is kept, a refusal's too): a
	// redelivery, or the same request published again.
	if _, kept, err := b.lastResponse(ctx, respSubject); err != nil {
		return nil, nil, fmt.Errorf("looking for a kept answer on %s: %w", respSubject, err)
	} else if kept {
		return nil, nil, nil
	}
	if b.afterKept != nil {
		b.afterKept(req.ID)
	}
	// From here the requester's response subject is known: a refusal is
	// answered, so that a child does not wait for its timeout.
	r.answer = true
	if target, err := mailbox.NormalizeSessionID(req.TargetSessionID); err != nil || target != b.session {
		r.reason = fmt.Sprintf("it targets session %q, not this session %q", req.TargetSessionID, b.session)
		return r, nil, nil
	}
	if _, err := mailbox.RequestIDFromName(req.ID + ".json"); err != nil {
		// wire admits it, but serve's watcher skips its file (a name
		// starting with a dot is a staging file): bridged, it would
		// never be answered and would hold its place for good.
		r.reason = fmt.Sprintf("its id %q makes %q, not a mailbox file name serve reads", req.ID, req.ID+".json")
		return r, nil, nil
	}
	if req.RequesterPID != 0 {
		r.reason = "it carries a requesterPid, which a broker cannot probe over NATS"
		return r, nil, nil
	}
	gone, err := natsbox.GoneSubject(b.session, owner, req.ID)
	if err != nil {
		r.reason = fmt.Sprintf("no gone subject: %v", err)
		return r, nil, nil
	}
	withdrawn := b.wasGone(owner, idTok)
	if !withdrawn {
		// The child may have given up while no broker listened (this one
		// restarting, or a standby waiting for the lease): its gone
		// message is kept in the engine. Deciding such an ask would ask
		// a human about something nobody waits for.
		op, cancel := context.WithTimeout(ctx, opTimeout)
		withdrawn, err = natsbox.KeptGone(op, b.JS, gone)
		cancel()
		if err != nil {
			// Not known: the ask is served. Holding it back until the
			// engine answers would stop the whole session's service
			// when COURIER_GONE is missing or unreachable (every ask
			// put back and taken again each second), where at worst an
			// ask whose child gave up is decided for nobody, as before
			// the stream existed.
			b.report(fmt.Errorf("nats bridge: looking for a kept gone message on %s (serving the ask): %w", gone, err))
			withdrawn = false
		}
	}
	if withdrawn {
		// The child gave up before its request was taken.
		b.log(reviewlog.NATSRequestWithdrawnEntry{RequestID: req.ID, Owner: owner, Subject: gone})
		return nil, nil, nil
	}
	switch {
	case prior != nil && prior.Owner != owner:
		r.reason = fmt.Sprintf("request id %q is in use by another owner's request", req.ID)
		return r, nil, nil
	case prior == nil && inInbox:
		r.reason = fmt.Sprintf("request id %q is in use by a file request in the inbox", req.ID)
		return r, nil, nil
	}
	return nil, &marker{RequestID: req.ID, Owner: owner, Subject: subject, RequestSHA256: r.digest, BridgedAt: b.now().UnixMilli()}, nil
}

// inInbox reports whether the request or the response of id is in the
// session's inbox (any error but "not there" counts as there).
func (b *Bridge) inInbox(id string) bool {
	for _, path := range b.paths(id) {
		if _, err := os.Lstat(path); !errors.Is(err, os.ErrNotExist) {
			return true
		}
	}
	return false
}

// paths are the request and the response file of id.
func (b *Bridge) paths(id string) []string {
	req, err1 := b.Layout.RequestPath(b.session, id)
	resp, err2 := b.Layout.ResponsePath(b.session, id)
	if err1 != nil || err2 != nil {
		return nil
	}
	return []string{req, resp}
}

func (b *Bridge) lastResponse(ctx context.Context, subject string) ([]byte, bool, error) {
	op, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	return natsbox.LastResponse(op, b.JS, subject)
}

// bridge writes the marker, then the request file with the message's
// exact bytes. The marker comes first: a broker killed between the two
// finds a marker without a request, and the message, never acked, is
// delivered again and bridged then.
func (b *Bridge) bridge(m *marker, data []byte) error {
	b.mu.Lock()
	b.mark(m)
	delete(b.absent, m.RequestID)
	b.mu.Unlock()
	if err := b.marks.write(*m); err != nil {
		b.forget(m.RequestID)
		return err
	}
	if err := b.Layout.WriteRequest(b.session, m.RequestID, data); err != nil {
		b.forget(m.RequestID)
		b.marks.remove(m.RequestID)
		return err
	}
	return nil
}

// forget drops the marker of id from memory, making room to fetch.
func (b *Bridge) forget(id string) {
	b.mu.Lock()
	b.unmark(id)
	delete(b.absent, id)
	b.mu.Unlock()
	select {
	case b.freed <- struct{}{}:
	default:
	}
}

// refuse logs a refused message and, when its requester can be told,
// publishes an unavailable answer bound to its bytes.
func (b *Bridge) refuse(ctx context.Context, subject string, r *refusal) {
	e := reviewlog.NATSRequestRefusedEntry{Subject: subject, Owner: r.owner, Reason: r.reason}
	if r.req != nil {
		e.RequestID = r.req.ID
	}
	if r.answer {
		err := b.answerUnavailable(ctx, r)
		if err != nil {
			b.report(fmt.Errorf("nats bridge: answering the refused %s: %w", subject, err))
		}
		e.Answered = err == nil
	}
	b.log(e)
	b.report(fmt.Errorf("nats bridge: refused %s: %s", subject, r.reason))
}

// answerUnavailable publishes "unavailable" as the answer to r's request,
// bound to its bytes, with the reason the broker refused it.
func (b *Bridge) answerUnavailable(ctx context.Context, r *refusal) error {
	reason := fmt.Sprintf("Session '%s' refused the request over NATS: %s", b.session, r.reason)
	resp := decision.NobodyAnswered(reason).Response(b.session, b.now().UnixMilli()).Bind(r.req.ID, r.digest)
	data, err := wire.EncodeResponse(resp)
	if err != nil {
		return err
	}
	op, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	return b.publishResponse(op, r.owner, r.req.ID, data)
}

// publishResponse publishes an answer to owner's response subject for id,
// deduplicated by the engine (Nats-Msg-Id), and waits for the engine to
// confirm it kept it.
func (b *Bridge) publishResponse(ctx context.Context, owner, id string, data []byte) error {
	subject, err := natsbox.ResponseSubject(b.session, owner, id)
	if err != nil {
		return err
	}
	msgID, err := natsbox.MsgID(b.session, owner, id)
	if err != nil {
		return err
	}
	_, err = b.JS.Publish(ctx, subject, data, jetstream.WithMsgID(msgID))
	return err
}
