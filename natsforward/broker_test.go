package natsforward

import (
	"context"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/seed6639df8c/courier/natsbox"
	"github.com/seed6639df8c/courier/natsembed"
	"github.com/seed6639df8c/courier/wire"
)

// testWait bounds every wait of these tests.
const testWait = 20 * time.Second

const (
	parent = "parent"
	owner  = "alice"
)

// engine is an embedded server with courier's streams and buckets.
type engine struct {
	srv      *natsembed.Server
	url      string
	storeDir string
	// conf is the server's configuration file; "" is none (no users).
	conf string
}

// startEngine starts a server on port (-1: a free one) storing in dir, and
// ensures courier's streams and buckets in it.
func startEngine(t *testing.T, dir string, port int) *engine {
	return startEngineConf(t, dir, port, "")
}

// startEngineConf is startEngine with the server configuration file conf:
// the broker then connects as the user "broker" of natsbox's permission
// layout.
func startEngineConf(t *testing.T, dir string, port int, conf string) *engine {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), testWait)
	defer cancel()
	srv, err := natsembed.Start(ctx, natsembed.Options{ServerName: "test", Port: port, StoreDir: dir, ConfigFile: conf, NoLog: true})
	if err != nil {
		t.Fatal(err)
	}
	e := &engine{srv: srv, url: srv.ClientURL(), storeDir: dir, conf: conf}
	t.Cleanup(func() { e.stop(t) })
	nc := e.dialBroker(t)
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	if err := natsbox.Ensure(ctx, js, natsbox.Config{Replicas: 1, ResponseTTL: 10 * time.Minute, RequestMaxAge: 10 * time.Minute}); err != nil {
		t.Fatal(err)
	}
	return e
}

func (e *engine) stop(t *testing.T) {
	if e.srv == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), testWait)
	defer cancel()
	if err := e.srv.Shutdown(ctx); err != nil {
		t.Error(err)
	}
	e.srv = nil
}

// port is the engine's client port.
func (e *engine) port(t *testing.T) int {
	u, err := url.Parse(e.url)
	if err != nil {
		t.Fatal(err)
	}
	p, err := strconv.Atoi(u.Port())
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// dial connects to a loopback engine as the child does.
func dial(t *testing.T, u string) *nats.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), testWait)
	defer cancel()
	nc, err := natsbox.Connect(ctx, natsbox.Options{URL: u, Local: true, Name: t.Name()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return nc
}

// dialBroker connects as the broker.
func (e *engine) dialBroker(t *testing.T) *nats.Conn {
	if e.conf == "" {
		return dial(t, e.url)
	}
	return dialUser(t, e.url, "broker", "", nil)
}

// dialUser connects as user of natsbox's permission layout (password
// user-pw), with replies on inbox when not "", and the server's
// asynchronous errors to errs when not nil.
func dialUser(t *testing.T, u, user, inbox string, errs chan<- error) *nats.Conn {
	t.Helper()
	pw := filepath.Join(t.TempDir(), user+".pw")
	if err := os.WriteFile(pw, []byte(user+"-pw\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	opts := natsbox.Options{URL: u, User: user, PasswordFile: pw, InboxPrefix: inbox, Name: user}
	if errs != nil {
		opts.Extra = []nats.Option{nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
			select {
			case errs <- err:
			default:
			}
		})}
	}
	ctx, cancel := context.WithTimeout(t.Context(), testWait)
	defer cancel()
	nc, err := natsbox.Connect(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return nc
}

// received is one request as the fake broker took it from the stream.
type received struct {
	subject string
	data    []byte
	req     wire.Request
}

// fakeBroker is the smallest broker side: it takes the session's requests
// from the stream (acking them), hands them to the test, and publishes
// what the test answers; it sees the gone messages, and puts a heartbeat.
type fakeBroker struct {
	t       *testing.T
	nc      *nats.Conn
	js      jetstream.JetStream
	session string
	// requests receives every request taken; gone every gone subject.
	requests chan received
	gone     chan string
}

func newFakeBroker(t *testing.T, e *engine, session string) *fakeBroker {
	t.Helper()
	nc := e.dialBroker(t)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	b := &fakeBroker{t: t, nc: nc, js: js, session: session, requests: make(chan received, 16), gone: make(chan string, 16)}
	goneFilter, err := natsbox.SessionGoneFilter(session)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := nc.Subscribe(goneFilter, func(m *nats.Msg) { b.gone <- m.Subject }); err != nil {
		t.Fatal(err)
	}
	filter, err := natsbox.SessionRequestFilter(session)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), testWait)
	defer cancel()
	cons, err := js.CreateOrUpdateConsumer(ctx, natsbox.StreamRequests, jetstream.ConsumerConfig{
		Durable: "fake-broker", FilterSubject: filter, AckPolicy: jetstream.AckExplicitPolicy,
	})
	if err != nil {
		t.Fatal(err)
	}
	cc, err := cons.Consume(func(m jetstream.Msg) {
		// Nothing is reported once the test is over (its context ends
		// before its clean-ups close the connection).
		req, _, err := wire.DecodeRequest(m.Data())
		if err != nil && t.Context().Err() == nil {
			t.Errorf("the fake broker got a request it cannot read: %v", err)
		}
		if err := m.Ack(); err != nil && t.Context().Err() == nil {
			t.Errorf("ack: %v", err)
		}
		b.requests <- received{subject: m.Subject(), data: m.Data(), req: req}
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cc.Stop)
	return b
}

// heartbeat puts a fresh heartbeat, announcing bound answers when bind.
func (b *fakeBroker) heartbeat(bind bool) {
	b.t.Helper()
	hb := wire.Heartbeat{SessionID: b.session, PID: os.Getpid(), UpdatedAt: time.Now().UnixMilli()}
	if bind {
		hb.ResponseBinding = wire.BindingSHA256
	}
	ctx, cancel := context.WithTimeout(b.t.Context(), testWait)
	defer cancel()
	if err := natsbox.PublishHeartbeat(ctx, b.js, b.session, hb); err != nil {
		b.t.Fatal(err)
	}
}

// next is the next request the broker took.
func (b *fakeBroker) next() received {
	b.t.Helper()
	select {
	case r := <-b.requests:
		return r
	case <-time.After(testWait):
		b.t.Fatal("the fake broker got no request")
	}
	return received{}
}

// nextGone is the next gone subject.
func (b *fakeBroker) nextGone() string {
	b.t.Helper()
	select {
	case s := <-b.gone:
		return s
	case <-time.After(testWait):
		b.t.Fatal("the fake broker saw no gone message")
	}
	return ""
}

// respond publishes resp as the answer to r, bound to r's bytes when bind.
func (b *fakeBroker) respond(r received, resp wire.Response, bind bool) {
	b.t.Helper()
	if bind {
		resp = resp.Bind(r.req.ID, wire.RequestDigest(r.data))
	}
	data, err := wire.EncodeResponse(resp)
	if err != nil {
		b.t.Fatal(err)
	}
	b.publishResponse(b.js, r, data, true)
}

// plant publishes data on r's response subject as someone else would: no
// Nats-Msg-Id, so the broker's own answer is not taken for its duplicate.
func (b *fakeBroker) plant(r received, resp wire.Response) {
	b.t.Helper()
	data, err := wire.EncodeResponse(resp)
	if err != nil {
		b.t.Fatal(err)
	}
	b.publishResponse(b.js, r, data, false)
}

// publishResponse publishes data on r's response subject through js, with
// the broker's Nats-Msg-Id when withID.
func (b *fakeBroker) publishResponse(js jetstream.JetStream, r received, data []byte, withID bool) {
	b.t.Helper()
	kind, _, o, _, err := natsbox.ParseSubject(r.subject)
	if err != nil || kind != "req" {
		b.t.Fatalf("request subject %q: kind %q, %v", r.subject, kind, err)
	}
	subj, err := natsbox.ResponseSubject(b.session, o, r.req.ID)
	if err != nil {
		b.t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(b.t.Context(), testWait)
	defer cancel()
	var opts []jetstream.PublishOpt
	if withID {
		id, err := natsbox.MsgID(b.session, o, r.req.ID)
		if err != nil {
			b.t.Fatal(err)
		}
		opts = append(opts, jetstream.WithMsgID(id))
	}
	if _, err := js.PublishMsg(ctx, &nats.Msg{Subject: subj, Data: data}, opts...); err != nil {
		b.t.Fatal(err)
	}
}
