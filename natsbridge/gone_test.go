package natsbridge

import (
	"context"
	"testing"
	"time"

	"github.com/seed6639df8c/courier/decision"
	"github.com/seed6639df8c/courier/natsbox"
	"github.com/seed6639df8c/courier/reviewlog"
	"github.com/seed6639df8c/courier/serve"
)

// holding is a terminal that answers nothing until the ask ends.
type holding struct {
	asked chan string
	ended chan error
}

func (h *holding) Decide(ctx context.Context, ask serve.Ask) decision.Decision {
	h.asked <- ask.Request.ID
	<-ctx.Done()
	h.ended <- context.Cause(ctx)
	return decision.NobodyAnswered("ended")
}

// A gone message withdraws the ask: the bridge removes the request file,
// serve's sweep ends the ask at the terminal as for a file child that gave
// up, nothing is answered, and the marker is dropped.
func TestGoneWithdrawsTheAsk(t *testing.T) {
	e := newEnv(t)
	term := &holding{asked: make(chan string, 1), ended: make(chan error, 1)}
	e.startServeWith(term)
	b := e.newBridge()
	e.startBridge(b)

	req, data := request(t, "npm test")
	sub := e.listen(owner, req.ID)
	e.ask(owner, req.ID, data)
	select {
	case id := <-term.asked:
		if id != req.ID {
			t.Fatalf("the terminal was asked %s, want %s", id, req.ID)
		}
	case <-time.After(wait):
		t.Fatal("the ask did not reach the terminal")
	}
	gone, _ := natsbox.GoneSubject(session, owner, req.ID)
	if err := e.conn.Publish(gone, nil); err != nil {
		t.Fatal(err)
	}
	select {
	case <-term.ended:
	case <-time.After(wait):
		t.Fatal("the ask was not withdrawn at the terminal")
	}
	reqPath, _ := e.layout.RequestPath(session, req.ID)
	if exists(reqPath) {
		t.Error("the request file is still in the inbox")
	}
	eventually(t, "the marker dropped", func() bool { return !exists(b.marks.path(req.ID)) })
	if msg, err := sub.NextMsg(300 * time.Millisecond); err == nil {
		t.Fatalf("an answer to a withdrawn ask: %s", msg.Data)
	}
	w := e.lines(reviewlog.NATSRequestWithdrawn)
	if len(w) != 1 || w[0]["requestId"] != req.ID || w[0]["owner"] != owner || w[0]["subject"] != gone {
		t.Errorf("withdrawn entries %v", w)
	}
	if g := e.lines(reviewlog.ForwardedRequesterGone); len(g) != 1 || g[0]["requestId"] != req.ID {
		t.Errorf("serve's requester_gone entries %v", g)
	}
}

// A gone message for an ask still in the stream (the broker was busy, or
// away) is remembered: the request is acked when it comes, never bridged.
func TestGoneBeforeTheRequestIsTakenWithdrawsIt(t *testing.T) {
	e := newEnv(t)
	b := e.newBridge()
	e.startBridge(b)
	req, data := request(t, "npm test")
	gone, _ := natsbox.GoneSubject(session, owner, req.ID)
	if err := e.conn.Publish(gone, nil); err != nil {
		t.Fatal(err)
	}
	// The gone message is core NATS: it is the bridge's before a flush
	// round trip through the same server returns.
	if err := e.conn.Flush(); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the gone message heard", func() bool {
		b.mu.Lock()
		defer b.mu.Unlock()
		return len(b.gone) == 1
	})
	e.ask(owner, req.ID, data)
	eventually(t, "the request acked", func() bool { return e.pending() == 0 && b.takes.Load() == 1 })
	if n := len(e.lines(reviewlog.NATSRequestBridged)); n != 0 {
		t.Errorf("%d bridged, want 0", n)
	}
	if w := e.lines(reviewlog.NATSRequestWithdrawn); len(w) != 1 || w[0]["requestId"] != req.ID || w[0]["subject"] != gone {
		t.Errorf("withdrawn entries %v", w)
	}
	reqPath, _ := e.layout.RequestPath(session, req.ID)
	if exists(reqPath) {
		t.Error("the request was bridged")
	}
}

// A child that gave up while no broker listened (this one restarting, a
// standby waiting for the lease) sent its gone message to nobody; the
// engine keeps it, and the broker that takes the request later withdraws
// it instead of deciding an ask nobody waits for.
func TestAGoneKeptWhileNoBrokerListenedWithdrawsTheAsk(t *testing.T) {
	e := newEnv(t)
	req, data := request(t, "npm test")
	e.ask(owner, req.ID, data)
	gone, _ := natsbox.GoneSubject(session, owner, req.ID)
	if err := e.conn.Publish(gone, nil); err != nil {
		t.Fatal(err)
	}
	if err := e.conn.Flush(); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the gone message kept", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		defer cancel()
		kept, err := natsbox.KeptGone(ctx, e.js, gone)
		return err == nil && kept
	})

	b := e.newBridge()
	e.startBridge(b)
	eventually(t, "the request acked", func() bool { return e.pending() == 0 && b.takes.Load() == 1 })
	if n := len(e.lines(reviewlog.NATSRequestBridged)); n != 0 {
		t.Errorf("%d bridged, want 0", n)
	}
	if w := e.lines(reviewlog.NATSRequestWithdrawn); len(w) != 1 || w[0]["requestId"] != req.ID || w[0]["subject"] != gone {
		t.Errorf("withdrawn entries %v", w)
	}
	reqPath, _ := e.layout.RequestPath(session, req.ID)
	if exists(reqPath) {
		t.Error("the request was bridged")
	}
}

// Without COURIER_GONE (deleted while the broker runs, or an engine that
// lost it) the bridge cannot tell whether a child gave up: it serves the
// ask rather than putting every ask back each second, which stopped the
// session's whole service.
func TestAnAskIsServedWhenTheGoneStreamIsMissing(t *testing.T) {
	e := newEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	if err := e.js.DeleteStream(ctx, natsbox.StreamGone); err != nil {
		t.Fatal(err)
	}
	e.startServe()
	e.startBridge(e.newBridge())
	req, data := request(t, "git status --short")
	sub := e.listen(owner, req.ID)
	e.ask(owner, req.ID, data)
	decode(t, answer(t, sub), req, data)
}
