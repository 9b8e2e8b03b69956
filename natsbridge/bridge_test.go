package natsbridge

import (
	"bytes"
	"context"
	"errors"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/seed6639df8c/courier/mailbox"
	"github.com/seed6639df8c/courier/natsbox"
	"github.com/seed6639df8c/courier/provenance"
	"github.com/seed6639df8c/courier/reviewlog"
	"github.com/seed6639df8c/courier/wire"
)

// An ask the built-in rules allow, published over NATS, is served by a
// real serve.Broker through the bridge: the child receives the response
// file's exact bytes, bound to the bytes it published, and the engine
// keeps them for a child that reconnects. The request, the response and
// the marker are gone afterwards, and the log joins the bridge's entries
// to serve's by request id.
func TestAllowedAskIsAnsweredWithTheResponseFileBytes(t *testing.T) {
	e := newEnv(t)
	e.startServe()
	b := e.newBridge()
	var (
		mu   sync.Mutex
		file []byte
	)
	b.beforePublish = func(id string) {
		path, _ := e.layout.ResponsePath(session, id)
		data, err := os.ReadFile(path)
		if err != nil {
			t.Errorf("the response file before publishing: %v", err)
		}
		mu.Lock()
		file = data
		mu.Unlock()
	}
	e.startBridge(b)

	req, data := request(t, "git status --short")
	sub := e.listen(owner, req.ID)
	e.ask(owner, req.ID, data)
	got := answer(t, sub)
	resp := decode(t, got, req, data)
	if !resp.Approved || resp.ResponderSessionID != session {
		t.Fatalf("answer %s: want approved by %s", got, session)
	}
	if _, ok := resp.DecidedBy.(provenance.Rule); !ok {
		t.Errorf("decidedBy %#v, want the rule", resp.DecidedBy)
	}
	mu.Lock()
	if string(file) != string(got) {
		t.Errorf("published %s\nthe response file held %s", got, file)
	}
	mu.Unlock()
	respSubject, _ := natsbox.ResponseSubject(session, owner, req.ID)
	kept, ok, err := natsbox.LastResponse(t.Context(), e.js, respSubject)
	if err != nil || !ok || string(kept) != string(got) {
		t.Errorf("kept answer %q, %v, %v; want the published bytes", kept, ok, err)
	}
	paths := b.paths(req.ID)
	eventually(t, "the request, the response and the marker removed", func() bool {
		return !exists(paths[0]) && !exists(paths[1]) && !exists(b.marks.path(req.ID))
	})
	eventually(t, "the request acked", func() bool { return e.pending() == 0 })
	bridged := e.lines(reviewlog.NATSRequestBridged)
	if len(bridged) != 1 || bridged[0]["requestId"] != req.ID || bridged[0]["owner"] != owner || bridged[0]["requestSha256"] != wire.RequestDigest(data) {
		t.Errorf("bridged entries %v", bridged)
	}
	eventually(t, "the published entry", func() bool { return len(e.lines(reviewlog.NATSResponsePublished)) == 1 })
	published := e.lines(reviewlog.NATSResponsePublished)
	if published[0]["requestId"] != req.ID || published[0]["subject"] != respSubject {
		t.Errorf("published entries %v", published)
	}
	// serve logs the decision after it wrote the answer.
	eventually(t, "serve's auto_approved entry", func() bool { return len(e.lines(reviewlog.ForwardedAutoApproved)) > 0 })
	if auto := e.lines(reviewlog.ForwardedAutoApproved); len(auto) != 1 || auto[0]["requestId"] != req.ID {
		t.Errorf("serve's auto_approved entries %v", auto)
	}
}

// An ask is answered once: the same message published twice with its msg
// id is stored once by the engine; the same bytes published again without
// it (past the engine's duplicate window) find the answer kept and are
// acked, not bridged.
func TestTheSameAskPublishedAgainIsAnsweredOnce(t *testing.T) {
	e := newEnv(t)
	e.startServe()
	b := e.newBridge()
	e.startBridge(b)

	req, data := request(t, "git status --short")
	sub := e.listen(owner, req.ID)
	e.ask(owner, req.ID, data)
	e.ask(owner, req.ID, data)
	decode(t, answer(t, sub), req, data)
	eventually(t, "the marker removed", func() bool { return !exists(b.marks.path(req.ID)) })

	subject, _ := natsbox.RequestSubject(session, owner, req.ID)
	before := b.takes.Load()
	e.publish(subject, "", data)
	eventually(t, "the second copy taken", func() bool { return b.takes.Load() > before })
	eventually(t, "the stream emptied", func() bool { return e.pending() == 0 })
	if msg, err := sub.NextMsg(300 * time.Millisecond); err == nil {
		t.Fatalf("a second answer: %s", msg.Data)
	}
	if n := len(e.lines(reviewlog.NATSRequestBridged)); n != 1 {
		t.Errorf("%d bridged entries, want 1", n)
	}
	if n := len(e.lines(reviewlog.ForwardedAutoApproved)); n != 1 {
		t.Errorf("%d auto_approved entries, want 1", n)
	}
	if n := b.takes.Load(); n != 2 {
		t.Errorf("%d messages taken, want 2 (the engine stored the msg-id duplicate once)", n)
	}
}

// A bridge stopped after the request file was written and before the ack
// (as a broker killed there) leaves the message to be delivered again; the
// next bridge takes the redelivery at once (its consumer is made anew,
// so the earlier one's hour-long AckWait does not hold it back), acks it
// without bridging it twice, and the ask is answered once, when serve
// starts.
func TestRedeliveryAfterARestartMidwayIsNotBridgedTwice(t *testing.T) {
	e := newEnv(t)
	first := e.newBridge()
	first.ackWait = time.Hour
	written := make(chan string, 1)
	first.afterWrite = func(id string) bool { written <- id; return false }
	r := e.startBridge(first)

	req, data := request(t, "git status --short")
	sub := e.listen(owner, req.ID)
	e.ask(owner, req.ID, data)
	select {
	case <-written:
	case <-time.After(wait):
		t.Fatal("the request was not bridged")
	}
	if err := r.stop(); err != nil {
		t.Fatal(err)
	}
	reqPath, _ := e.layout.RequestPath(session, req.ID)
	if !exists(reqPath) || !exists(first.marks.path(req.ID)) {
		t.Fatal("the request file or its marker is missing after the stop")
	}

	second := e.newBridge()
	second.ackWait = time.Hour
	e.startBridge(second)
	eventually(t, "the redelivery taken", func() bool { return second.takes.Load() >= 1 })
	eventually(t, "the redelivery acked", func() bool { return e.pending() == 0 })
	if n := len(e.lines(reviewlog.NATSRequestBridged)); n != 1 {
		t.Fatalf("%d bridged entries, want 1", n)
	}

	e.startServe()
	decode(t, answer(t, sub), req, data)
	if msg, err := sub.NextMsg(300 * time.Millisecond); err == nil {
		t.Fatalf("a second answer: %s", msg.Data)
	}
	if n := len(e.lines(reviewlog.ForwardedAutoApproved)); n != 1 {
		t.Errorf("%d auto_approved entries, want 1", n)
	}
}

// One broker per session through the engine: a second bridge of the same
// session refuses to run, naming the holder, until the first stopped.
func TestTheLeaseKeepsASecondBridgeOut(t *testing.T) {
	e := newEnv(t)
	r := e.startBridge(e.newBridge())
	second := e.newBridge()
	second.Holder = "second bridge"
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	err := second.Run(ctx)
	if !errors.Is(err, natsbox.ErrLeaseHeld) || !strings.Contains(err.Error(), "test bridge") {
		t.Fatalf("second Run = %v, want ErrLeaseHeld naming the holder", err)
	}
	select {
	case <-second.Serving():
		t.Fatal("the refused bridge says it serves")
	default:
	}
	if err := r.stop(); err != nil {
		t.Fatal(err)
	}
	e.startBridge(e.newBridge())
}

// The heartbeat is in the engine while the bridge runs (this process's
// pid, the binding announced) and withdrawn when it stops.
func TestTheHeartbeatAppearsAndIsWithdrawn(t *testing.T) {
	e := newEnv(t)
	r := e.startBridge(e.newBridge())
	s, err := natsbox.ReadServing(t.Context(), e.js, session, time.Now())
	if err != nil || !s.Alive || s.Heartbeat.PID != os.Getpid() || s.Heartbeat.ResponseBinding != wire.BindingSHA256 {
		t.Fatalf("serving %+v, %v: want alive, pid %d, binding sha256", s, err, os.Getpid())
	}
	if err := r.stop(); err != nil {
		t.Fatal(err)
	}
	s, err = natsbox.ReadServing(t.Context(), e.js, session, time.Now())
	if err != nil || s.Alive {
		t.Fatalf("serving %+v, %v after the stop: want not alive", s, err)
	}
}

// A full bridge fetches nothing: past MaxInFlight asks bridged and not
// answered, the rest wait in the stream.
func TestAFloodWaitsInTheStream(t *testing.T) {
	e := newEnv(t)
	b := e.newBridge()
	b.MaxInFlight = 2
	e.startBridge(b)
	for range 5 {
		req, data := request(t, "git status --short")
		e.ask(owner, req.ID, data)
	}
	eventually(t, "two bridged", func() bool { return len(e.lines(reviewlog.NATSRequestBridged)) == 2 })
	// A fetch every second at most: two seconds show that no more come.
	time.Sleep(2 * fetchWait)
	if n := len(e.lines(reviewlog.NATSRequestBridged)); n != 2 {
		t.Fatalf("%d bridged, want 2", n)
	}
	if n := e.pending(); n != 3 {
		t.Fatalf("%d left in the stream, want 3", n)
	}
}

// A broker restarted after a SIGKILL finds its earlier run's lease still
// held (here a lease of an hour, which would never lapse within the
// test): it takes it over from that run at once, and serves; a lease held
// as another broker still keeps it out.
func TestAnEarlierRunsLeaseIsTakenOver(t *testing.T) {
	e := newEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	if err := natsbox.Ensure(ctx, e.js, natsbox.Config{Replicas: 1, LeaseTTL: time.Hour}); err != nil {
		t.Fatal(err)
	}
	// The killed run's lease: taken, never renewed, never released.
	if _, err := natsbox.AcquireLease(ctx, e.js, session, "broker pid 1 on h, root /r"); err != nil {
		t.Fatal(err)
	}
	b := e.newBridge()
	b.Holder = "broker pid 2 on h, root /r"
	b.EarlierRun = func(holder string) bool { return strings.HasSuffix(holder, " on h, root /r") && holder != b.Holder }
	e.startBridge(b)

	other := e.newBridge()
	other.Holder = "broker pid 3 on g, root /r"
	other.EarlierRun = func(holder string) bool { return strings.HasSuffix(holder, " on g, root /r") && holder != other.Holder }
	runCtx, stop := context.WithTimeout(ctx, wait)
	defer stop()
	if err := other.Run(runCtx); !errors.Is(err, natsbox.ErrLeaseHeld) {
		t.Fatalf("a broker of another host ran with the lease taken over: %v; want ErrLeaseHeld", err)
	}
}

// A broker whose lease lapsed (deleted here, as a partition would let it
// lapse) while another broker took the session takes no more asks once
// that broker made its consumer: the stale broker's consumer is gone (the
// taker dropped every consumer of the session, and its own has a name of
// its run), and the stale one neither makes it again nor could fetch from
// the taker's. Every ask published after the taker started lands in the
// taker's inbox only (before: 25 of 60 in the stale broker's).
func TestABrokerThatLostItsLeaseTakesNoMoreAsks(t *testing.T) {
	e := newEnv(t)
	stale := e.newBridge()
	stale.Holder = "broker A"
	e.startBridge(stale)
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	kv, err := e.js.KeyValue(ctx, natsbox.BucketLease)
	if err != nil {
		t.Fatal(err)
	}
	key, _ := natsbox.Token(session)
	if err := kv.Delete(ctx, key); err != nil {
		t.Fatal(err)
	}
	taker := e.newBridge()
	taker.Holder = "broker B"
	taker.Layout = mailbox.Layout{Root: t.TempDir()}
	e.startBridge(taker)

	var ids []string
	for range 20 {
		req, data := request(t, "npm test")
		ids = append(ids, req.ID)
		e.ask(owner, req.ID, data)
	}
	inTaker := func() int {
		n := 0
		for _, id := range ids {
			if p, _ := taker.Layout.RequestPath(session, id); exists(p) {
				n++
			}
		}
		return n
	}
	eventually(t, "all 20 asks in the taker's inbox", func() bool { return inTaker() == len(ids) })
	for _, id := range ids {
		if p, _ := e.layout.RequestPath(session, id); exists(p) {
			t.Errorf("ask %s was taken by the broker that lost its lease", id)
		}
	}
	eventually(t, "the stale broker's intake ended", func() bool { return e.reported("taking no more requests") })
}

// A broker killed after serve wrote an answer and before it removed the
// request leaves both in the inbox. The next broker publishes the kept
// answer, and serve must not decide the request again: the bridge used to
// remove the answer it published and leave the request, which serve then
// found unanswered and decided a second time (a review found it by
// reading the code; this test saw serve's second decision).
func TestAnAnswerLeftByAKilledBrokerIsNotDecidedAgain(t *testing.T) {
	e := newEnv(t)
	first := e.newBridge()
	r := e.startBridge(first)
	req, data := request(t, "git status --short")
	sub := e.listen(owner, req.ID)
	e.ask(owner, req.ID, data)
	// Another ask bridged by the same broker and not answered when it
	// stopped: the next broker's serve answers it.
	open, openData := request(t, "git diff")
	openSub := e.listen(owner, open.ID)
	e.ask(owner, open.ID, openData)
	eventually(t, "the asks bridged and acked", func() bool {
		return e.bridgedCount(req.ID) == 1 && e.bridgedCount(open.ID) == 1 && e.pending() == 0
	})
	if err := r.stop(); err != nil {
		t.Fatal(err)
	}
	// The predecessor's serve answered, and was killed before it removed
	// the request.
	kept, err := wire.EncodeResponse(wire.Response{
		Approved: true, State: wire.StateApproved, ResponderSessionID: session, RespondedAt: time.Now().UnixMilli(),
	}.Bind(req.ID, wire.RequestDigest(data)))
	if err != nil {
		t.Fatal(err)
	}
	if err := e.layout.WriteResponse(session, req.ID, kept); err != nil {
		t.Fatal(err)
	}

	e.startBridge(e.newBridge())
	if got := answer(t, sub); !bytes.Equal(got, kept) {
		t.Fatalf("published %s, want the kept answer %s", got, kept)
	}
	e.startServe()
	// A request written after serve started is answered after what serve
	// found at its start.
	probe, probeData := request(t, "git log --oneline")
	probeSub := e.listen(owner, probe.ID)
	e.ask(owner, probe.ID, probeData)
	answer(t, probeSub)
	answer(t, openSub)

	if msg, err := sub.NextMsg(300 * time.Millisecond); err == nil {
		t.Errorf("a second answer: %s", msg.Data)
	}
	for _, l := range e.lines(reviewlog.ForwardedAutoApproved) {
		if l["requestId"] == req.ID {
			t.Errorf("serve decided the answered request again: %v", l)
		}
	}
	reqPath, _ := e.layout.RequestPath(session, req.ID)
	respPath, _ := e.layout.ResponsePath(session, req.ID)
	for _, p := range []string{reqPath, respPath} {
		if exists(p) {
			t.Errorf("%s is left in the inbox", p)
		}
	}
	// The predecessor may have been killed before it logged its decision:
	// the publication says the answer was an earlier run's, and what it
	// says was decided. The probe and the ask left unanswered, answered
	// in this run, say neither.
	published := map[string]logLine{}
	for _, l := range e.lines(reviewlog.NATSResponsePublished) {
		published[l["requestId"].(string)] = l
	}
	if l := published[req.ID]; l["answeredEarlier"] != true || l["resolution"] != string(wire.StateApproved) {
		t.Errorf("the kept answer's publication: %v, want answeredEarlier and its resolution", l)
	}
	for what, id := range map[string]string{"the probe's": probe.ID, "the ask left unanswered": open.ID} {
		if l := published[id]; l == nil || l["answeredEarlier"] != nil || l["resolution"] != nil {
			t.Errorf("%s publication: %v, want neither answeredEarlier nor a resolution", what, l)
		}
	}
}
