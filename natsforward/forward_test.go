package natsforward

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
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

// warnings collects a Client's warnings, and signals each.
type warnings struct {
	mu   sync.Mutex
	errs []error
	c    chan error
}

func newWarnings() *warnings { return &warnings{c: make(chan error, 64)} }

func (w *warnings) add(err error) {
	w.mu.Lock()
	w.errs = append(w.errs, err)
	w.mu.Unlock()
	select {
	case w.c <- err:
	default:
	}
}

// refusal waits for the warning that a message was refused.
func (w *warnings) refusal(t *testing.T) error {
	t.Helper()
	deadline := time.After(testWait)
	for {
		select {
		case err := <-w.c:
			if strings.Contains(err.Error(), "refused") {
				return err
			}
		case <-deadline:
			t.Fatal("no message was refused")
			return nil
		}
	}
}

// newClient is a child's Client on its own connection to e.
func newClient(t *testing.T, e *engine) (*Client, *warnings) {
	t.Helper()
	nc := dial(t, e.url)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	w := newWarnings()
	return &Client{Conn: nc, JS: js, Owner: owner, Timeout: testWait, OnWarning: w.add}, w
}

// askLs is a bash ask from a child of parent, as the child builds it: the
// units filled in by Forward, the pid cleared.
func askLs(t *testing.T) wire.Request {
	t.Helper()
	id, err := forward.NewRequestID()
	if err != nil {
		t.Fatal(err)
	}
	req, err := forward.Ask{Session: "child-1", Agent: "Explore", Surface: "bash", Value: "ls -la", Cwd: "/w"}.Request(id, parent, time.Now().UnixMilli())
	if err != nil {
		t.Fatal(err)
	}
	req.AccessIntent.AskingUnits = nil // Forward fills them in
	return req
}

// forwardAsync runs c.Forward(ctx, req) and returns where its decision
// will be.
func forwardAsync(ctx context.Context, c *Client, req wire.Request) <-chan decision.Decision {
	out := make(chan decision.Decision, 1)
	go func() { out <- c.Forward(ctx, req) }()
	return out
}

func await(t *testing.T, ch <-chan decision.Decision) decision.Decision {
	t.Helper()
	select {
	case d := <-ch:
		return d
	case <-time.After(testWait):
		t.Fatal("Forward did not return")
	}
	return decision.Decision{}
}

var (
	ruleAllow = wire.Response{Approved: true, State: wire.StateApproved, ResponderSessionID: parent, RespondedAt: 1,
		DecidedBy: provenance.Rule{Surface: "bash", Pattern: provenance.Str("ls *")}}
	userDeny = wire.Response{Approved: false, State: wire.StateDenied, DenialReason: "not now", ResponderSessionID: parent, RespondedAt: 1,
		DecidedBy: provenance.User{Via: provenance.ViaDialog}}
)

// TestForwardTakesTheBrokersAnswer: an allow and a deny come back nested
// under the responder, and the request the broker took is the child's
// own bytes, with units and without a pid, logged with its subjects.
func TestForwardTakesTheBrokersAnswer(t *testing.T) {
	e := startEngine(t, t.TempDir(), -1)
	b := newFakeBroker(t, e, parent)
	b.heartbeat(true)
	for _, tt := range []struct {
		name string
		resp wire.Response
	}{{"allow", ruleAllow}, {"deny", userDeny}} {
		t.Run(tt.name, func(t *testing.T) {
			c, _ := newClient(t, e)
			logPath := filepath.Join(t.TempDir(), "review.jsonl")
			log, err := reviewlog.Open(logPath)
			if err != nil {
				t.Fatal(err)
			}
			defer log.Close()
			c.Log = log
			req := askLs(t)
			req.RequesterPID = 4242
			got := forwardAsync(t.Context(), c, req)
			r := b.next()
			if r.req.RequesterPID != 0 || len(r.req.AccessIntent.AskingUnits) == 0 || r.req.ID != req.ID {
				t.Errorf("the broker took %+v: want the child's request with units and no pid", r.req)
			}
			b.respond(r, tt.resp, true)
			d := await(t, got)
			want := provenance.Forwarded{ResponderSessionID: provenance.Str(parent), Decision: tt.resp.DecidedBy}
			if d.Approved() != tt.resp.Approved || d.Unavailable() || !reflect.DeepEqual(d.DecidedBy, want) || d.DenialReason != tt.resp.DenialReason {
				t.Fatalf("decision = %+v, want the broker's nested under %q", d, parent)
			}
			reqSubj, _ := natsbox.RequestSubject(parent, owner, req.ID)
			if r.subject != reqSubj {
				t.Errorf("published on %q, want %q", r.subject, reqSubj)
			}
			log.Close()
			entries := readLog(t, logPath)
			if len(entries) < 3 || !strings.Contains(entries[0], `"requestPath":"`+reqSubj+`"`) {
				t.Errorf("review log:\n%s", strings.Join(entries, "\n"))
			}
		})
	}
}

// TestForwardRefusesWhatDoesNotAnswerIt: a message on the response
// subject that is not bound to the child's bytes (a plant, an answer to
// other bytes, one unbound where the broker binds) is refused, and the
// broker's own answer, which comes after it, decides.
func TestForwardRefusesWhatDoesNotAnswerIt(t *testing.T) {
	e := startEngine(t, t.TempDir(), -1)
	b := newFakeBroker(t, e, parent)
	b.heartbeat(true)
	for _, tt := range []struct {
		name  string
		plant func(r received) wire.Response
	}{
		{"bound to other bytes", func(r received) wire.Response {
			return ruleAllow.Bind(r.req.ID, wire.RequestDigest([]byte("other bytes")))
		}},
		{"bound to another request", func(r received) wire.Response {
			return ruleAllow.Bind("perm-other", wire.RequestDigest(r.data))
		}},
		{"unbound where the broker binds", func(received) wire.Response { return ruleAllow }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c, w := newClient(t, e)
			got := forwardAsync(t.Context(), c, askLs(t))
			r := b.next()
			b.plant(r, tt.plant(r))
			if err := w.refusal(t); !errors.Is(err, wire.ErrForeignResponse) && !errors.Is(err, wire.ErrUnboundResponse) {
				t.Errorf("refused with %v", err)
			}
			b.respond(r, userDeny, true)
			if d := await(t, got); d.Approved() || d.Unavailable() || d.DenialReason != userDeny.DenialReason {
				t.Fatalf("decision = %+v, want the broker's deny", d)
			}
		})
	}
}

// TestForwardRefusesAnUnboundAnswerWhateverTheHeartbeatSays: every
// broker over NATS binds its answers, so an unbound answer is refused
// even when no heartbeat announces binding: one missing, or one forged
// without the announcement (anyone who may put heartbeats, e.g. on an
// unauthenticated local server), must not make an unbound plant an
// allow. The broker's bound answer, after it, decides. (Before, the
// child insisted only once a heartbeat announced binding, and took the
// unbound plant.)
func TestForwardRefusesAnUnboundAnswerWhateverTheHeartbeatSays(t *testing.T) {
	e := startEngine(t, t.TempDir(), -1)
	for _, tt := range []struct {
		name      string
		heartbeat func(b *fakeBroker)
	}{
		{"forged without binding", func(b *fakeBroker) { b.heartbeat(false) }},
		{"missing", func(*fakeBroker) { deleteHeartbeat(t, e, parent) }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			b := newFakeBroker(t, e, parent)
			tt.heartbeat(b)
			c, w := newClient(t, e)
			got := forwardAsync(t.Context(), c, askLs(t))
			r := b.next()
			b.plant(r, ruleAllow)
			select {
			case d := <-got:
				t.Fatalf("decision = %+v: the unbound plant decided", d)
			case err := <-w.c:
				if !errors.Is(err, wire.ErrUnboundResponse) {
					t.Errorf("warned %v, want a refusal: %v", err, wire.ErrUnboundResponse)
				}
			case <-time.After(testWait):
				t.Fatal("the plant was neither refused nor taken")
			}
			b.respond(r, userDeny, true)
			if d := await(t, got); d.Approved() || d.Unavailable() || d.DenialReason != userDeny.DenialReason {
				t.Fatalf("decision = %+v, want the broker's deny", d)
			}
		})
	}
}

// TestForwardGivesUp: nobody answering is unavailable with pi's reason,
// never a user's denial, and the broker is told (gone): no heartbeat
// within the grace, no answer within the timeout, the caller gone.
func TestForwardGivesUp(t *testing.T) {
	e := startEngine(t, t.TempDir(), -1)
	for _, tt := range []struct {
		name      string
		heartbeat bool
		timeout   time.Duration
		cancel    bool
		want      string
		within    time.Duration
	}{
		{"no heartbeat", false, testWait, false, forward.NotServingReason(parent), 5 * time.Second},
		{"no answer", true, 700 * time.Millisecond, false, "Session 'parent' did not answer within 0.7s", 5 * time.Second},
		{"cancelled", true, testWait, true, forward.ReasonSessionEnded, 5 * time.Second},
	} {
		t.Run(tt.name, func(t *testing.T) {
			session := parent
			b := newFakeBroker(t, e, session)
			if tt.heartbeat {
				b.heartbeat(true)
			} else {
				deleteHeartbeat(t, e, session)
			}
			c, _ := newClient(t, e)
			c.Timeout, c.Grace, c.LivenessInterval = tt.timeout, 300*time.Millisecond, 50*time.Millisecond
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			req := askLs(t)
			start := time.Now()
			got := forwardAsync(ctx, c, req)
			b.next()
			if tt.cancel {
				cancel()
			}
			d := await(t, got)
			if !d.Unavailable() || d.DenialReason != tt.want || !reflect.DeepEqual(d.DecidedBy, provenance.Unavailable{Reason: tt.want}) {
				t.Fatalf("decision = %+v, want unavailable: %s", d, tt.want)
			}
			if took := time.Since(start); took > tt.within {
				t.Errorf("gave up after %s, want within %s", took, tt.within)
			}
			goneSubj, _ := natsbox.GoneSubject(session, owner, req.ID)
			if g := b.nextGone(); g != goneSubj {
				t.Errorf("gone on %q, want %q", g, goneSubj)
			}
		})
	}
}

// TestForwardUnpublishedIsNotWritten: an engine that does not take the
// request (no stream for its subject) is "could not be written".
func TestForwardUnpublishedIsNotWritten(t *testing.T) {
	e := startEngine(t, t.TempDir(), -1)
	c, _ := newClient(t, e)
	ctx, cancel := context.WithTimeout(t.Context(), testWait)
	defer cancel()
	if err := c.JS.DeleteStream(ctx, natsbox.StreamRequests); err != nil {
		t.Fatal(err)
	}
	c.Timeout = 3 * time.Second
	d := c.Forward(t.Context(), askLs(t))
	if !d.Unavailable() || d.DenialReason != forward.ReasonNotWritten {
		t.Fatalf("decision = %+v, want unavailable: %s", d, forward.ReasonNotWritten)
	}
}

// TestForwardTakesTheAnswerKeptWhileDisconnected: the server restarts
// (same store) between the request and the answer, and the broker
// answers before the child is back: the child, not subscribed when it
// was published, takes the answer the engine kept.
func TestForwardTakesTheAnswerKeptWhileDisconnected(t *testing.T) {
	// Waits on timers, not the CPU: run beside the other slow waits.
	t.Parallel()
	dir := t.TempDir()
	e := startEngine(t, dir, -1)
	port := e.port(t)
	b := newFakeBroker(t, e, parent)
	b.heartbeat(true)

	// The child's connection waits 5 s between attempts to a server,
	// long enough for the broker to answer while it is away.
	child, err := nats.Connect(e.url, nats.ReconnectWait(5*time.Second), nats.ReconnectJitter(0, 0), nats.MaxReconnects(-1))
	if err != nil {
		t.Fatal(err)
	}
	defer child.Close()
	js, err := jetstream.New(child)
	if err != nil {
		t.Fatal(err)
	}
	c := &Client{Conn: child, JS: js, Owner: owner, Timeout: testWait}
	got := forwardAsync(t.Context(), c, askLs(t))
	r := b.next()

	e.stop(t)
	e2 := startEngine(t, dir, port)
	broker := dial(t, e2.url)
	bjs, err := jetstream.New(broker)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), testWait)
	defer cancel()
	hb := wire.Heartbeat{SessionID: parent, PID: 1, UpdatedAt: time.Now().UnixMilli(), ResponseBinding: wire.BindingSHA256}
	if err := natsbox.PublishHeartbeat(ctx, bjs, parent, hb); err != nil {
		t.Fatal(err)
	}
	resp := userDeny.Bind(r.req.ID, wire.RequestDigest(r.data))
	data, err := wire.EncodeResponse(resp)
	if err != nil {
		t.Fatal(err)
	}
	b.publishResponse(bjs, r, data, true)
	if child.IsConnected() {
		t.Fatal("the child reconnected before the broker answered: the test proves nothing")
	}
	if d := await(t, got); d.Approved() || d.Unavailable() || d.DenialReason != userDeny.DenialReason {
		t.Fatalf("decision = %+v, want the broker's deny", d)
	}
}

// deleteHeartbeat makes sure session has no heartbeat.
func deleteHeartbeat(t *testing.T, e *engine, session string) {
	t.Helper()
	nc := dial(t, e.url)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), testWait)
	defer cancel()
	kv, err := js.KeyValue(ctx, natsbox.BucketServing)
	if err != nil {
		t.Fatal(err)
	}
	key, err := natsbox.Token(session)
	if err != nil {
		t.Fatal(err)
	}
	if err := kv.Purge(ctx, key); err != nil && !errors.Is(err, jetstream.ErrKeyNotFound) {
		t.Fatal(err)
	}
}

// readLog is the review log's lines.
func readLog(t *testing.T, path string) []string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSpace(string(data)), "\n")
}

// TestForwardWithinTheOwnersPermissions: under natsbox's permission
// layout (testdata/permissions.conf), a child that is alice, with replies
// on _INBOX_alice, asks, is answered, and gives up (gone, the kept-answer
// look-ups, the heartbeat reads) without one permissions violation.
func TestForwardWithinTheOwnersPermissions(t *testing.T) {
	e := startEngineConf(t, t.TempDir(), -1, filepath.Join("..", "natsbox", "testdata", "permissions.conf"))
	b := newFakeBroker(t, e, parent)
	b.heartbeat(true)
	errs := make(chan error, 64)
	nc := dialUser(t, e.url, owner, "_INBOX_"+owner, errs)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	c := &Client{Conn: nc, JS: js, Owner: owner, Timeout: testWait, LivenessInterval: 50 * time.Millisecond}

	got := forwardAsync(t.Context(), c, askLs(t))
	b.respond(b.next(), ruleAllow, true)
	if d := await(t, got); !d.Approved() {
		t.Fatalf("decision = %+v, want the broker's allow", d)
	}

	c.Timeout = time.Second
	req := askLs(t)
	got = forwardAsync(t.Context(), c, req)
	b.next()
	if d := await(t, got); !d.Unavailable() || d.DenialReason != forward.NoAnswerReason(parent, time.Second) {
		t.Fatalf("decision = %+v, want unavailable at the timeout", d)
	}
	goneSubj, _ := natsbox.GoneSubject(parent, owner, req.ID)
	if g := b.nextGone(); g != goneSubj {
		t.Errorf("gone on %q, want %q", g, goneSubj)
	}
	select {
	case err := <-errs:
		t.Fatalf("the child went beyond its permissions: %v", err)
	default:
	}
}

// TestForwardUnacknowledgedIsNotWritten: a publish the engine never
// acknowledges (here: an identity whose replies its permissions refuse,
// connected without its own inbox prefix) is "could not be written" after
// publishAckTimeout, not a broker that did not answer at the ask's
// timeout; and the broker is told, in case the request was stored.
func TestForwardUnacknowledgedIsNotWritten(t *testing.T) {
	// Waits on timers, not the CPU: run beside the other slow waits.
	t.Parallel()
	e := startEngineConf(t, t.TempDir(), -1, filepath.Join("..", "natsbox", "testdata", "permissions.conf"))
	b := newFakeBroker(t, e, parent)
	b.heartbeat(true)
	nc := dialUser(t, e.url, owner, "", nil)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	c := &Client{Conn: nc, JS: js, Owner: owner, Timeout: time.Minute}
	req := askLs(t)
	start := time.Now()
	d := c.Forward(t.Context(), req)
	if !d.Unavailable() || d.DenialReason != forward.ReasonNotWritten {
		t.Fatalf("decision = %+v, want unavailable: %s", d, forward.ReasonNotWritten)
	}
	if took := time.Since(start); took > publishAckTimeout+5*time.Second {
		t.Errorf("gave up after %s, want about %s", took, publishAckTimeout)
	}
	goneSubj, _ := natsbox.GoneSubject(parent, owner, req.ID)
	if g := b.nextGone(); g != goneSubj {
		t.Errorf("gone on %q, want %q", g, goneSubj)
	}
}
