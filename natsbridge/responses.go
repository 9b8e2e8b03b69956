package natsbridge

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/seed6639df8c/courier/mailbox"
	"github.com/seed6639df8c/courier/natsbox"
	"github.com/seed6639df8c/courier/reviewlog"
	"github.com/seed6639df8c/courier/wire"
)

// Backoff of a publish the engine did not confirm: doubling from
// retryFirst up to retryMax, for as long as the bridge runs.
const (
	retryFirst = 100 * time.Millisecond
	retryMax   = 5 * time.Second
)

// publishLoop publishes the answers the watcher hands out, until it
// closes its channel (Run's ctx ended).
func (b *Bridge) publishLoop(ctx context.Context, w *mailbox.Watcher) {
	for name := range w.Ready() {
		id, err := mailbox.RequestIDFromName(name)
		if err != nil {
			w.Done(name)
			continue
		}
		if b.publishAnswer(ctx, id) {
			w.Done(name)
		} else {
			// Not ours yet, not readable yet, or not published before
			// the bridge stopped: look again on the next event or scan.
			w.Forget(name)
		}
	}
}

// publishAll publishes what answers serve left in responses/ for the
// marked requests: on stop, until ctx ends.
func (b *Bridge) publishAll(ctx context.Context) {
	for _, id := range b.markedIDs() {
		if ctx.Err() != nil {
			return
		}
		b.publishAnswer(ctx, id)
	}
}

// markedIDs are the ids of the requests bridged and not answered yet.
func (b *Bridge) markedIDs() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	ids := make([]string, 0, len(b.byID))
	for id := range b.byID {
		ids = append(ids, id)
	}
	return ids
}

// publishAnswer publishes the response file of id when id is a bridged
// request, then removes the file and the marker. It reports whether the
// file is dealt with: published, not the bridge's, gone, or refused.
func (b *Bridge) publishAnswer(ctx context.Context, id string) bool {
	b.mu.Lock()
	m := b.byID[id]
	b.mu.Unlock()
	if m == nil {
		// A file child's answer: not ours to carry.
		return true
	}
	path, err := b.Layout.ResponsePath(b.session, id)
	if err != nil {
		return true
	}
	data, resp, err := b.boundAnswer(m)
	var unbound *unboundError
	switch {
	case errors.Is(err, os.ErrNotExist):
		return true
	case errors.As(err, &unbound):
		// Not serve's answer to the bytes bridged: serve writes its own
		// over it (answeredOnDisk), which is delivered as a new file.
		b.log(reviewlog.ForwardingWarningEntry{Message: "nats bridge: a response that does not answer the bridged request is not published", RequestID: reviewlog.Str(id), ResponsePath: path, Error: unbound.err})
		b.report(fmt.Errorf("nats bridge: not publishing %s: %w", path, unbound.err))
		return true
	case err != nil:
		b.log(reviewlog.ForwardingWarningEntry{Message: "nats bridge: a response that cannot be read safely is not published", RequestID: reviewlog.Str(id), ResponsePath: path, Error: err})
		b.report(fmt.Errorf("nats bridge: %s: %w", path, err))
		return true
	}
	if b.beforePublish != nil {
		b.beforePublish(id)
	}
	b.removeAnswered(id, m)
	if !b.publishRetrying(ctx, m, data) {
		return false
	}
	subject, _ := responseSubjectOf(b.session, m)
	e := reviewlog.NATSResponsePublishedEntry{RequestID: id, Owner: m.Owner, Subject: subject}
	if m.answeredEarlier {
		// serve writes an answer, then logs its decision: an earlier run
		// stopped between the two left an answer whose decision no log
		// may hold. The answer's own account of it is logged here.
		e.AnsweredEarlier = &reviewlog.EarlierAnswer{Resolution: string(resp.State), DenialReason: resp.DenialReason, DecidedBy: resp.DecidedBy}
	}
	b.log(e)
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		b.report(fmt.Errorf("nats bridge: removing the published %s: %w", path, err))
	}
	if err := b.marks.remove(id); err != nil {
		b.report(fmt.Errorf("nats bridge: %w", err))
	}
	b.forget(id)
	return true
}

// unboundError is a response file under a bridged request's id that is
// not serve's answer to the bytes bridged (boundAnswer).
type unboundError struct{ err error }

func (e *unboundError) Error() string { return "not the bridged request's answer: " + e.err.Error() }
func (e *unboundError) Unwrap() error { return e.err }

// boundAnswer reads the response file of m's request and returns it if
// it is serve's answer to the request bytes m bridged. Otherwise the
// error is fs.ErrNotExist when there is none, an *unboundError when it
// answers something else, or why it could not be read safely.
func (b *Bridge) boundAnswer(m *marker) ([]byte, wire.Response, error) {
	id := m.RequestID
	path, err := b.Layout.ResponsePath(b.session, id)
	if err != nil {
		return nil, wire.Response{}, err
	}
	data, err := mailbox.ReadFileOf(path, b.Layout.BrokerOwner())
	if err != nil {
		return nil, wire.Response{}, err
	}
	resp, _, err := wire.DecodeResponse(data)
	if err == nil {
		err = wire.CheckBinding(resp, id, m.RequestSHA256, true)
	}
	if err != nil {
		return nil, wire.Response{}, &unboundError{err}
	}
	return data, resp, nil
}

// removeAnswered removes the request file of id when it still holds the
// bytes bridged, before the answer to it is published and removed. serve
// writes an answer, then removes the request; a broker killed between the
// two leaves both, and the next broker's serve, finding the request with
// no answer beside it once this bridge published and removed the answer,
// would decide it a second time (TestAnAnswerLeftByAKilledBrokerIsNotDecidedAgain).
// Usually serve removed the request already and this is one lookup.
func (b *Bridge) removeAnswered(id string, m *marker) {
	path, err := b.Layout.RequestPath(b.session, id)
	if err != nil {
		return
	}
	data, err := mailbox.ReadFileOf(path, b.Layout.BrokerOwner())
	if err != nil {
		// Gone (serve removed it), or not a file the bridge could have
		// written: serve judges what it finds there.
		return
	}
	if wire.RequestDigest(data) != m.RequestSHA256 {
		return // another request under the id: serve's to answer
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		b.report(fmt.Errorf("nats bridge: removing the answered %s: %w", path, err))
	}
}

// publishRetrying publishes an answer until the engine confirms it or ctx
// ends, with a bounded backoff; each failure is reported.
func (b *Bridge) publishRetrying(ctx context.Context, m *marker, data []byte) bool {
	delay := retryFirst
	for {
		op, cancel := context.WithTimeout(ctx, opTimeout)
		err := b.publishResponse(op, m.Owner, m.RequestID, data)
		cancel()
		if err == nil {
			return true
		}
		if ctx.Err() != nil {
			b.report(fmt.Errorf("nats bridge: the answer to %s is not published (stopping; it is kept in the inbox for the next start): %w", m.RequestID, err))
			return false
		}
		b.log(reviewlog.ForwardingErrorEntry{Message: "nats bridge: failed to publish a response; retrying", RequestID: reviewlog.Str(m.RequestID), Error: err})
		b.report(fmt.Errorf("nats bridge: publishing the answer to %s (retrying in %s): %w", m.RequestID, delay, err))
		sleep(ctx, delay)
		delay = min(2*delay, retryMax)
	}
}

// sweepLoop drops, every sweepEvery, the markers of asks that ended
// without an answer.
func (b *Bridge) sweepLoop(ctx context.Context) { every(ctx, sweepEvery, b.sweep) }

// every runs fn every interval until ctx ends.
func every(ctx context.Context, interval time.Duration, fn func(context.Context)) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			fn(ctx)
		}
	}
}

// sweep drops a marker whose request and response are both gone on two
// sweeps in a row, with no answer published: the ask was withdrawn (its
// child gave up) or serve refused the file (past the forwarding timeout).
// Two sweeps, because serve may still write the answer of an ask it was
// deciding when its request was withdrawn. The request is looked for
// before the response: serve writes the response before it removes the
// request, so both found missing means no answer was on its way then. A
// marker whose answer is kept on the engine was published by a broker
// killed before it removed the marker.
func (b *Bridge) sweep(ctx context.Context) {
	for _, id := range b.markedIDs() {
		if ctx.Err() != nil {
			return
		}
		if b.inInbox(id) {
			b.mu.Lock()
			delete(b.absent, id)
			b.mu.Unlock()
			continue
		}
		b.mu.Lock()
		m := b.byID[id]
		b.absent[id]++
		drop := b.absent[id] >= 2
		b.mu.Unlock()
		if m == nil {
			continue
		}
		if !drop {
			if subject, err := responseSubjectOf(b.session, m); err == nil {
				if _, kept, err := b.lastResponse(ctx, subject); err == nil && kept {
					drop = true
				}
			}
		}
		if drop {
			if err := b.marks.remove(id); err != nil {
				b.report(fmt.Errorf("nats bridge: %w", err))
				continue
			}
			b.forget(id)
		}
	}
}

// responseSubjectOf is where the answer to m's request is published.
func responseSubjectOf(session string, m *marker) (string, error) {
	return natsbox.ResponseSubject(session, m.Owner, m.RequestID)
}
