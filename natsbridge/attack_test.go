package natsbridge

import (
	"bytes"
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/seed6639df8c/courier/natsbox"
	"github.com/seed6639df8c/courier/reviewlog"
)

// Bodies that disagree with their subject, or are not requests at all,
// are refused and acked, never bridged (nor looped on).
func TestHostileBodies(t *testing.T) {
	e := newEnv(t)
	e.startServe()
	b := e.newBridge()
	e.startBridge(b)
	base, baseData := request(t, "ls")
	_ = base
	withID := func(id string) []byte {
		req, _ := request(t, "ls")
		req.ID = id
		return encode(t, req)
	}
	cases := []struct {
		name   string
		id     string // the subject's request id
		data   []byte
		reason string
	}{
		{"not JSON", "perm-a-1", []byte("hello"), "its body is not a request"},
		{"duplicate keys", "perm-a-2", bytes.Replace(baseData, []byte(`{`), []byte(`{"id":"perm-a-2",`), 1), "its body is not a request"},
		{"over 1 MiB", "perm-a-3", func() []byte {
			req, _ := request(t, "ls")
			req.ID, req.Message = "perm-a-3", strings.Repeat("x", natsbox.MaxMsgSize)
			return encode(t, req)
		}(), "over"},
		{"id of the body not the subject's", "perm-a-4", baseData, "is not the subject's"},
		{"dotted id of another subject", "a.b", withID("a-b"), "is not the subject's"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			subject, err := natsbox.RequestSubject(session, owner, c.id)
			if err != nil {
				t.Fatal(err)
			}
			before := len(e.lines(reviewlog.NATSRequestRefused))
			// Straight to the bridge: the engine refuses a message over
			// its MaxMsgSize before any broker sees it.
			if ack, wrote := b.handle(context.Background(), subject, c.data, nil); !ack || wrote {
				t.Fatalf("ack %v, wrote %v: want acked, nothing written", ack, wrote)
			}
			got := e.lines(reviewlog.NATSRequestRefused)
			if len(got) != before+1 || !strings.Contains(got[before]["reason"].(string), c.reason) {
				t.Fatalf("refusals %v: want one saying %q", got[before:], c.reason)
			}
		})
	}
	if n := len(e.lines(reviewlog.NATSRequestBridged)); n != 0 {
		t.Fatalf("%d bridged", n)
	}
}

// A request over the engine's MaxMsgSize never reaches a broker.
func TestTheEngineRefusesABodyOverOneMiB(t *testing.T) {
	e := newEnv(t)
	subject, _ := natsbox.RequestSubject(session, owner, "perm-big-1")
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	if _, err := e.js.Publish(ctx, subject, make([]byte, natsbox.MaxMsgSize+1)); err == nil {
		t.Fatal("a body over 1 MiB was stored")
	}
}

// Ids with dots tokenize to base64 subjects and are served and answered
// on their own subject.
func TestADottedIDIsServed(t *testing.T) {
	e := newEnv(t)
	e.startServe()
	e.startBridge(e.newBridge())
	req, _ := request(t, "git status --short")
	req.ID = "perm.dotted..id"
	data := encode(t, req)
	sub := e.listen(owner, req.ID)
	e.ask(owner, req.ID, data)
	decode(t, answer(t, sub), req, data)
	_ = time.Second
}

// An id that wire accepts but whose file serve's watcher skips (a name
// starting with a dot: the mailbox's staging files) is refused and
// answered, not bridged: bridged, it was never served nor answered, and
// its marker held a place of the bridge's bound for good, so that 4096
// such asks stopped the bridge for every owner. Seen failing: no answer,
// three in flight.
func TestAnIDServeWouldNotSeeIsRefused(t *testing.T) {
	e := newEnv(t)
	e.startServe()
	b := e.newBridge()
	e.startBridge(b)
	for _, id := range []string{".hidden", "..", "."} {
		req, _ := request(t, "git status --short")
		req.ID = id
		data := encode(t, req)
		sub := e.listen(owner, req.ID)
		e.ask(owner, req.ID, data)
		resp := decode(t, answer(t, sub), req, data)
		if resp.Approved || !strings.Contains(resp.DenialReason, "not a mailbox file name") {
			t.Errorf("%q: answered %+v, want unavailable saying why", id, resp)
		}
	}
	b.mu.Lock()
	n := len(b.byID)
	b.mu.Unlock()
	if n != 0 {
		t.Fatalf("%d in flight, want none", n)
	}
	if n := len(e.lines(reviewlog.NATSRequestBridged)); n != 0 {
		t.Fatalf("%d bridged", n)
	}
}

// One owner's flood of gone messages for asks that do not exist does not
// push out another owner's: bob's child gave up before its request was
// taken, and after alice's 40,000 gone messages his request is still
// withdrawn when it comes, not bridged. Seen failing: bob's request was
// bridged (his gone was among the entries dropped at random to stay
// within the bound).
func TestAGoneFloodDoesNotPushOutAnotherOwnersGone(t *testing.T) {
	e := newEnv(t)
	b := e.newBridge()
	e.startBridge(b)
	req, data := request(t, "git status --short")
	gone, _ := natsbox.GoneSubject(session, "bob", req.ID)
	b.withdraw(gone)
	for i := range 40000 {
		s, _ := natsbox.GoneSubject(session, "alice", "perm-flood-"+strconv.Itoa(i))
		b.withdraw(s)
	}
	sub := e.listen("bob", req.ID)
	e.ask("bob", req.ID, data)
	eventually(t, "bob's request taken", func() bool { return e.pending() == 0 && b.takes.Load() >= 1 })
	if n := len(e.lines(reviewlog.NATSRequestBridged)); n != 0 {
		t.Fatalf("bob's request was bridged after he gave up")
	}
	if w := e.lines(reviewlog.NATSRequestWithdrawn); len(w) != 1 || w[0]["requestId"] != req.ID {
		t.Fatalf("withdrawn %v: want bob's", w)
	}
	if msg, err := sub.NextMsg(100 * time.Millisecond); err == nil {
		t.Fatalf("answered %s", msg.Data)
	}
}

// A response file that is not serve's answer to the bytes bridged (here
// another request's answer, put in its place before the bridge read it)
// is not published: only an answer bound to the marker's digest is.
func TestAResponseFileOfAnotherRequestIsNotPublished(t *testing.T) {
	e := newEnv(t)
	release := make(released)
	t.Cleanup(func() { close(release) })
	e.startServeWith(release)
	b := e.newBridge()
	e.startBridge(b)
	// An answer serve gave to another request.
	other, otherData := request(t, "git status --short")
	otherSub := e.listen(owner, other.ID)
	e.ask(owner, other.ID, otherData)
	otherAnswer := answer(t, otherSub)

	req, data := request(t, "make deploy")
	sub := e.listen(owner, req.ID)
	e.ask(owner, req.ID, data)
	eventually(t, "the ask bridged", func() bool { return e.bridgedCount(req.ID) == 1 })
	warned := len(e.lines(reviewlog.ForwardingWarning))
	if err := e.layout.WriteResponse(session, req.ID, otherAnswer); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the warning", func() bool { return len(e.lines(reviewlog.ForwardingWarning)) > warned })
	if msg, err := sub.NextMsg(200 * time.Millisecond); err == nil {
		t.Fatalf("published %s", msg.Data)
	}
}
