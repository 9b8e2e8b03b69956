package natsbridge

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/seed6639df8c/courier/decision"
	"github.com/seed6639df8c/courier/forward"
	"github.com/seed6639df8c/courier/natsbox"
	"github.com/seed6639df8c/courier/reviewlog"
	"github.com/seed6639df8c/courier/rules"
	"github.com/seed6639df8c/courier/serve"
	"github.com/seed6639df8c/courier/wire"
)

// askOf is owner's request from requesting session child, for bash value.
func askOf(t *testing.T, child, value string) (wire.Request, []byte) {
	t.Helper()
	id, err := forward.NewRequestID()
	if err != nil {
		t.Fatal(err)
	}
	req, err := forward.Ask{Session: child, Agent: "Explore", Surface: "bash", Value: value, Cwd: "/w"}.Request(id, session, time.Now().UnixMilli())
	if err != nil {
		t.Fatal(err)
	}
	req.RequesterPID = 0
	return req, encode(t, req)
}

// holding is a terminal that keeps every ask until serve stops, and says
// which it was given.
type keeping chan string

func (h keeping) Decide(ctx context.Context, ask serve.Ask) decision.Decision {
	h <- ask.Request.ID
	<-ctx.Done()
	return decision.NobodyAnswered("stopped")
}

// An owner cannot fill serve's bound on waiting asks with its own, so
// that another owner's ask is refused "unavailable": past its share of
// asks bridged and unanswered (MaxInFlightPerOwner), an owner's messages
// go back to the stream for later and the bridge reads on. Seen failing
// without the share: bob's ask was answered "courier: 8 asks from all
// sessions are already waiting".
func TestOneOwnerCannotFillServesBoundForAnother(t *testing.T) {
	e := newEnv(t)
	held := make(keeping, 64)
	cfg, err := rules.Load("")
	if err != nil {
		t.Fatal(err)
	}
	policy, err := rules.NewPolicy(cfg, rules.Options{Protected: []string{e.layout.Root}})
	if err != nil {
		t.Fatal(err)
	}
	// Every requester session may wait 64, all of them together 8.
	sb := &serve.Broker{Layout: e.layout, Session: session, Policy: policy, Terminal: held, Log: e.log, SweepInterval: 20 * time.Millisecond, MaxPending: 8}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- sb.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-served })

	// alice's asks, from twelve requester sessions, ahead of bob's in
	// the stream; "make" is an ask the built-in rules leave to the
	// terminal.
	for i := range 12 {
		req, data := askOf(t, fmt.Sprintf("alice-child-%d", i), "make deploy")
		e.ask("alice", req.ID, data)
	}
	bobReq, bobData := askOf(t, "bob-child", "make deploy")
	sub := e.listen("bob", bobReq.ID)
	e.ask("bob", bobReq.ID, bobData)

	b := e.newBridge()
	b.MaxInFlightPerOwner = 4
	e.startBridge(b)
	deadline := time.After(wait)
	for {
		select {
		case id := <-held:
			if id == bobReq.ID {
				if msg, err := sub.NextMsg(100 * time.Millisecond); err == nil {
					t.Fatalf("bob's held ask was answered: %s", msg.Data)
				}
				return
			}
		case <-deadline:
			msg, err := sub.NextMsg(time.Millisecond)
			if err == nil {
				t.Fatalf("bob's ask never reached the terminal; it was answered %s", msg.Data)
			}
			t.Fatal("bob's ask never reached the terminal")
		}
	}
}

// floodN is the size of a flood: def, or COURIER_FLOOD_N for a
// measurement by hand.
func floodN(t *testing.T, def int) int {
	t.Helper()
	if s := os.Getenv("COURIER_FLOOD_N"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil {
			t.Fatalf("COURIER_FLOOD_N %q: %v", s, err)
		}
		return n
	}
	return def
}

// publishFlood publishes n asks of owner without waiting for each
// PubAck, then waits until the engine stored all of them.
func (e *env) publishFlood(owner string, n int) {
	e.t.Helper()
	for range n {
		req, data := request(e.t, "git status --short")
		subject, _ := natsbox.RequestSubject(session, owner, req.ID)
		msgID, _ := natsbox.MsgID(session, owner, req.ID)
		if _, err := e.js.PublishAsync(subject, data, jetstream.WithMsgID(msgID)); err != nil {
			e.t.Fatal(err)
		}
	}
	select {
	case <-e.js.PublishAsyncComplete():
	case <-time.After(wait):
		e.t.Fatal("the flood was not stored")
	}
}

// published counts the answers published to owner.
func (e *env) published(owner string) int {
	n := 0
	for _, l := range e.lines(reviewlog.NATSResponsePublished) {
		if l["owner"] == owner {
			n++
		}
	}
	return n
}

// A measurement, not a property: how long one owner's ask waits behind
// another owner's flood of asks the rules answer at once. The stream is
// read first come, first served, and the bridge's intake (a direct get,
// two files and a flush per ask) is the slowest step, so the ask waits
// for the whole flood (docs/decisions/0029, "Fairness across owners").
// COURIER_FLOOD_N=10000 go test -run TestMeasureAskBehindAFlood -v ./natsbridge
func TestMeasureAskBehindAFlood(t *testing.T) {
	if os.Getenv("COURIER_FLOOD_N") == "" {
		t.Skip("a measurement: set COURIER_FLOOD_N")
	}
	e := newEnv(t)
	e.startServe()
	n := floodN(t, 2000)
	start := time.Now()
	e.publishFlood("alice", n)
	stored := time.Since(start)
	req, data := askOf(t, "bob-child", "git status --short")
	sub := e.listen("bob", req.ID)
	e.ask("bob", req.ID, data)

	b := e.newBridge()
	began := time.Now()
	e.startBridge(b)
	msg, err := sub.NextMsg(10 * time.Minute)
	if err != nil {
		t.Fatalf("bob's ask behind %d of alice's: no answer: %v", n, err)
	}
	took := time.Since(began)
	decode(t, msg.Data, req, data)
	t.Logf("alice's flood of %d stored in %s; bob answered %s after the bridge started, after %d of alice's answers", n, stored, took.Round(time.Millisecond), e.published("alice"))
}
