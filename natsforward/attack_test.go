package natsforward

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/seed6639df8c/courier/forward"
	"github.com/seed6639df8c/courier/natsbox"
	"github.com/seed6639df8c/courier/wire"
)

// respSubject is the response subject of the request r took.
func (b *fakeBroker) respSubject(r received) string {
	b.t.Helper()
	_, _, o, _, err := natsbox.ParseSubject(r.subject)
	if err != nil {
		b.t.Fatal(err)
	}
	subj, err := natsbox.ResponseSubject(b.session, o, r.req.ID)
	if err != nil {
		b.t.Fatal(err)
	}
	return subj
}

// TestForwardWithstandsAFloodOfPlants: whoever may publish on the
// response subject floods it with distinct plants (core NATS, faster
// than the child reads: its subscription drops messages), then the
// broker answers. The child takes the broker's answer (from the
// subscription, or from the engine's kept answer once it sees it dropped
// messages), and logs a bounded number of refusals, not one per plant.
// (Before, every distinct plant was logged and remembered.)
func TestForwardWithstandsAFloodOfPlants(t *testing.T) {
	e := startEngine(t, t.TempDir(), -1)
	b := newFakeBroker(t, e, parent)
	b.heartbeat(true)
	c, w := newClient(t, e)
	got := forwardAsync(t.Context(), c, askLs(t))
	r := b.next()
	subj := b.respSubject(r)
	attacker := dial(t, e.url)
	const plants = 2000
	for i := range plants {
		data, err := wire.EncodeResponse(ruleAllow.Bind(r.req.ID, wire.RequestDigest(fmt.Appendf(nil, "other bytes %d", i))))
		if err != nil {
			t.Fatal(err)
		}
		if err := attacker.Publish(subj, data); err != nil {
			t.Fatal(err)
		}
	}
	if err := attacker.Flush(); err != nil {
		t.Fatal(err)
	}
	b.respond(r, userDeny, true)
	if d := await(t, got); d.Approved() || d.Unavailable() || d.DenialReason != userDeny.DenialReason {
		t.Fatalf("decision = %+v, want the broker's deny", d)
	}
	w.mu.Lock()
	refusals := 0
	for _, err := range w.errs {
		if strings.Contains(err.Error(), "refused") {
			refusals++
		}
	}
	w.mu.Unlock()
	t.Logf("%d plants, %d refusal warnings", plants, refusals)
	if refusals > maxRefusalsLogged+1 {
		t.Errorf("%d refusal warnings for %d plants, want at most %d", refusals, plants, maxRefusalsLogged+1)
	}
}

// TestForwardNeverTakesAKeptPlantThatSquatsTheBrokersMsgID: a plant
// published on the response subject with the broker's Nats-Msg-Id
// before the broker answers makes the engine drop the broker's answer as
// a duplicate: the plant is what it keeps. A child listening still gets
// the broker's answer (the engine delivers a duplicate to subscribers,
// it only does not store it). A child that was disconnected when the
// answer came finds only the plant, refuses it, and ends unavailable at
// its timeout: never an allow. (With permissions only the broker may
// publish there; this is a same-owner peer or an unauthenticated local
// server.)
func TestForwardNeverTakesAKeptPlantThatSquatsTheBrokersMsgID(t *testing.T) {
	// Waits on timers, not the CPU: run beside the other slow waits.
	t.Parallel()
	for _, tt := range []struct {
		name         string
		disconnected bool
	}{{"listening", false}, {"disconnected", true}} {
		t.Run(tt.name, func(t *testing.T) {
			_, b, p, nc, js := behindProxy(t)
			w := newWarnings()
			const timeout = 6 * time.Second
			c := &Client{Conn: nc, JS: js, Owner: owner, Timeout: timeout, OnWarning: w.add}
			start := time.Now()
			got := forwardAsync(t.Context(), c, askLs(t))
			r := b.next()
			// The plant: an allow, unbound, with the broker's id.
			data, err := wire.EncodeResponse(ruleAllow)
			if err != nil {
				t.Fatal(err)
			}
			id, err := natsbox.MsgID(parent, owner, r.req.ID)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(t.Context(), testWait)
			defer cancel()
			if _, err := b.js.PublishMsg(ctx, &nats.Msg{Subject: b.respSubject(r), Data: data}, jetstream.WithMsgID(id)); err != nil {
				t.Fatal(err)
			}
			w.refusal(t)
			if tt.disconnected {
				p.stall()
				p.drop()
				waitFor(t, func() bool { return !nc.IsConnected() })
			}
			answer, err := wire.EncodeResponse(userDeny.Bind(r.req.ID, wire.RequestDigest(r.data)))
			if err != nil {
				t.Fatal(err)
			}
			ack, err := b.js.PublishMsg(ctx, &nats.Msg{Subject: b.respSubject(r), Data: answer}, jetstream.WithMsgID(id))
			if err != nil {
				t.Fatal(err)
			}
			if !ack.Duplicate {
				t.Fatal("the engine stored the broker's answer: the plant did not squat its id, the test proves nothing")
			}
			if tt.disconnected {
				p.unstall()
			}
			d := await(t, got)
			if tt.disconnected {
				if d.Approved() || !d.Unavailable() || d.DenialReason != forward.NoAnswerReason(parent, timeout) {
					t.Fatalf("decision = %+v, want unavailable at the timeout", d)
				}
				if took := time.Since(start); took > timeout+deadlineMargin {
					t.Errorf("ended after %s, want within %s", took, timeout+deadlineMargin)
				}
				return
			}
			if d.Approved() || d.Unavailable() || d.DenialReason != userDeny.DenialReason {
				t.Fatalf("decision = %+v, want the broker's deny", d)
			}
		})
	}
}

// waitFor waits, with testWait as its deadline, until cond holds.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(testWait)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("the condition never held")
		}
		time.Sleep(10 * time.Millisecond) // polling a state that has no event
	}
}

// TestForwardWarnsOnceOfAKeptPlantThatLooksLikeAnError: a message kept on
// the response subject with an empty body and a Status header makes every
// look for the kept answer fail as an engine error. The child is told
// once, not on every look (before: a stderr line every 100 ms for the
// whole wait), and the broker's answer, after it, decides.
func TestForwardWarnsOnceOfAKeptPlantThatLooksLikeAnError(t *testing.T) {
	e := startEngine(t, t.TempDir(), -1)
	b := newFakeBroker(t, e, parent)
	b.heartbeat(true)
	c, w := newClient(t, e)
	// Look often, so that a warning per look would show in a short wait.
	c.LivenessInterval, c.KeptLookInterval = 50*time.Millisecond, 50*time.Millisecond
	got := forwardAsync(t.Context(), c, askLs(t))
	r := b.next()
	plant := nats.NewMsg(b.respSubject(r))
	plant.Header.Set("Status", "503")
	plant.Header.Set("Description", "planted")
	ctx, cancel := context.WithTimeout(t.Context(), testWait)
	defer cancel()
	if _, err := b.js.PublishMsg(ctx, plant); err != nil {
		t.Fatal(err)
	}
	// Twenty looks or so.
	time.Sleep(time.Second) // a window for looks to happen, not a wait for an event
	b.respond(r, userDeny, true)
	if d := await(t, got); d.Approved() || d.Unavailable() || d.DenialReason != userDeny.DenialReason {
		t.Fatalf("decision = %+v, want the broker's deny", d)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	looks := 0
	for _, err := range w.errs {
		if strings.Contains(err.Error(), "looking for the kept answer") {
			looks++
		}
	}
	if looks != 1 {
		t.Errorf("%d warnings of a failed look, want 1: %q", looks, w.errs)
	}
}
