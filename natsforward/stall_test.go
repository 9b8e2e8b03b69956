package natsforward

import (
	"context"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/seed6639df8c/courier/forward"
)

// stallProxy is a TCP proxy to a NATS server that can stall: once
// stalled it forwards nothing more either way and closes nothing, as a
// partition does that the kernel has not noticed (no RST, no FIN).
type stallProxy struct {
	ln       net.Listener
	upstream string

	mu     sync.Mutex
	resume chan struct{}
	conns  []net.Conn
}

func newStallProxy(t *testing.T, upstream string) *stallProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &stallProxy{ln: ln, upstream: upstream, resume: make(chan struct{})}
	close(p.resume)
	go p.serve()
	t.Cleanup(p.close)
	return p
}

// url is the proxy's client URL.
func (p *stallProxy) url() string { return "nats://" + p.ln.Addr().String() }

// stall stops every byte, from now on, in both directions.
func (p *stallProxy) stall() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.resume = make(chan struct{})
}

// unstall lets bytes through again, those held included.
func (p *stallProxy) unstall() {
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-p.resume:
	default:
		close(p.resume)
	}
}

// drop closes every connection made so far, as a partition the kernel
// noticed does; new ones are accepted (and stall while stalled).
func (p *stallProxy) drop() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

// gate is what a copier waits on before it forwards a chunk.
func (p *stallProxy) gate() <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.resume
}

func (p *stallProxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		u, err := net.Dial("tcp", p.upstream)
		if err != nil {
			c.Close()
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, c, u)
		p.mu.Unlock()
		go p.pipe(c, u)
		go p.pipe(u, c)
	}
}

// pipe copies from src to dst, holding each chunk while stalled.
func (p *stallProxy) pipe(src, dst net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		<-p.gate()
		n, err := src.Read(buf)
		if n > 0 {
			<-p.gate()
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			// The other side learns of it: a closed source closes the
			// destination, as a proxy that is not stalled does.
			dst.Close()
			return
		}
	}
}

func (p *stallProxy) close() {
	p.ln.Close()
	p.drop()
	p.unstall()
}

// deadlineMargin is how far past its timeout an ask may end: the gone
// message's bounded flush and the scheduling of a loaded machine.
const deadlineMargin = 500 * time.Millisecond

// TestForwardKeepsItsDeadlineWhateverTheEngineDoes: an engine that
// stalls (TCP up, nothing moves: a partition the kernel has not noticed)
// after the request was taken, or before its acknowledgement, or that is
// gone altogether, never holds the ask past its timeout by more than a
// small margin; the decision is unavailable, never a denial. The overrun
// is logged.
func TestForwardKeepsItsDeadlineWhateverTheEngineDoes(t *testing.T) {
	// Waits on timers, not the CPU: run beside the other slow waits.
	t.Parallel()
	for _, tt := range []struct {
		name    string
		timeout time.Duration
		// when: "taken" (after the broker took the request), "before"
		// (before the publish).
		when string
		// engineGone stops the server instead of stalling the proxy.
		engineGone bool
		want       string
	}{
		{"stalled while waiting", 2 * time.Second, "taken", false, forward.NoAnswerReason(parent, 2*time.Second)},
		{"stalled before the acknowledgement", 2 * time.Second, "before", false, forward.NoAnswerReason(parent, 2*time.Second)},
		{"stalled, acknowledgement timeout first", 7 * time.Second, "before", false, forward.ReasonNotWritten},
		{"engine gone before the publish", 2 * time.Second, "before", true, forward.NoAnswerReason(parent, 2*time.Second)},
		{"engine gone while waiting", 2 * time.Second, "taken", true, forward.NoAnswerReason(parent, 2*time.Second)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e, b, p, nc, js := behindProxy(t)
			c := &Client{Conn: nc, JS: js, Owner: owner, Timeout: tt.timeout}
			hit := func() {
				if tt.engineGone {
					e.stop(t)
				} else {
					p.stall()
				}
			}
			if tt.when == "before" {
				hit()
			}
			start := time.Now()
			got := forwardAsync(t.Context(), c, askLs(t))
			if tt.when == "taken" {
				b.next()
				hit()
			}
			d := await(t, got)
			took := time.Since(start)
			limit := tt.timeout
			if tt.want == forward.ReasonNotWritten {
				limit = publishAckTimeout
			}
			t.Logf("ended after %s: %s past its %s", took.Round(time.Millisecond), (took - limit).Round(time.Millisecond), limit)
			if !d.Unavailable() || d.DenialReason != tt.want {
				t.Errorf("decision = %+v, want unavailable: %s", d, tt.want)
			}
			if took > limit+deadlineMargin {
				t.Errorf("ended %s past %s, want within %s", took-limit, limit, deadlineMargin)
			}
		})
	}
}

// A publish whose acknowledgement is lost with a dropped connection is
// published again, under the same Nats-Msg-Id, once the client is back,
// and the ask is answered: it is not given up "could not be written" after
// the whole acknowledgement wait (the fault campaign's reconnect case lost
// 1 of 20 asks so).
func TestForwardPublishesAgainAfterAReconnect(t *testing.T) {
	t.Parallel()
	_, b, p, nc, js := behindProxy(t)
	c := &Client{Conn: nc, JS: js, Owner: owner, Timeout: 20 * time.Second}
	before := nc.Stats().OutMsgs
	p.stall()
	start := time.Now()
	got := forwardAsync(t.Context(), c, askLs(t))
	// The request is out of the client, into a connection that will
	// never carry it: then the connection is dropped.
	waitFor(t, func() bool {
		pending, err := nc.Buffered()
		return nc.Stats().OutMsgs > before && err == nil && pending == 0
	})
	p.drop()
	p.unstall()
	b.respond(b.next(), ruleAllow, true)
	d := await(t, got)
	if !d.Approved() {
		t.Fatalf("decision = %+v, want the broker's allow", d)
	}
	if took := time.Since(start); took >= publishAckTimeout {
		t.Errorf("answered after %s: the publish was not made again before the %s acknowledgement wait ran out", took, publishAckTimeout)
	}
}

// behindProxy starts an engine with a fake broker that announces bound
// answers, and a client connection that reaches the engine through a
// stall proxy.
func behindProxy(t *testing.T) (*engine, *fakeBroker, *stallProxy, *nats.Conn, jetstream.JetStream) {
	t.Helper()
	e := startEngine(t, t.TempDir(), -1)
	b := newFakeBroker(t, e, parent)
	b.heartbeat(true)
	p := newStallProxy(t, e.srv.ClientURL()[len("nats://"):])
	nc := dial(t, p.url())
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	return e, b, p, nc, js
}

// A caller's ctx that ends with the ask's own deadline (child hook gives
// both the same --timeout) ends the ask as timed out, never as "the
// session ended": when both are over, the deadline is looked at first.
// Here both are over before the publish (a connect that took the whole
// --timeout); in the wait, where both become ready at once, which one
// select took was chance (the hook's deadline test failed so in one
// clean-clone run), and the ctx branch now looks at the deadline too.
func TestACallersDeadlineIsTheAsksTimeout(t *testing.T) {
	t.Parallel()
	e := startEngine(t, t.TempDir(), -1)
	b := newFakeBroker(t, e, parent)
	b.heartbeat(true)
	c, _ := newClient(t, e)
	const timeout = 200 * time.Millisecond
	c.Timeout = timeout
	deadline := time.Now()
	c.Deadline = deadline
	ctx, cancel := context.WithDeadline(t.Context(), deadline)
	defer cancel()
	d := c.Forward(ctx, askLs(t))
	if want := forward.NoAnswerReason(parent, timeout); !d.Unavailable() || d.DenialReason != want {
		t.Fatalf("decision = %+v, want unavailable: %s", d, want)
	}
}
