package natsbridge

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/seed6639df8c/courier/forward"
	"github.com/seed6639df8c/courier/mailbox"
	"github.com/seed6639df8c/courier/natsbox"
	"github.com/seed6639df8c/courier/natsembed"
	"github.com/seed6639df8c/courier/reviewlog"
	"github.com/seed6639df8c/courier/rules"
	"github.com/seed6639df8c/courier/serve"
	"github.com/seed6639df8c/courier/wire"
)

// wait bounds every wait of these tests.
const wait = 20 * time.Second

const (
	session = "parent-1"
	owner   = "alice"
)

// env is an embedded engine, a mailbox and a review log; startServe and
// startBridge run a real serve.Broker (the built-in rules, the deny
// terminal) and a bridge on them.
type env struct {
	t       *testing.T
	srv     *natsembed.Server
	conn    *nats.Conn
	js      jetstream.JetStream
	layout  mailbox.Layout
	logPath string
	log     *reviewlog.Log

	mu     sync.Mutex
	errors []error
}

func newEnv(t *testing.T) *env {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	srv, err := natsembed.Start(ctx, natsembed.Options{Host: "127.0.0.1", Port: -1, StoreDir: t.TempDir(), NoLog: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		defer cancel()
		srv.Shutdown(ctx)
	})
	e := &env{t: t, srv: srv, layout: mailbox.Layout{Root: t.TempDir()}}
	e.conn, e.js = e.connect()
	if err := natsbox.Ensure(ctx, e.js, natsbox.Config{Replicas: 1}); err != nil {
		t.Fatal(err)
	}
	e.logPath = filepath.Join(t.TempDir(), "review.jsonl")
	if e.log, err = reviewlog.Open(e.logPath); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.log.Close() })
	return e
}

// connect opens another connection to the engine, closed at the end.
func (e *env) connect() (*nats.Conn, jetstream.JetStream) {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	conn, err := natsbox.Connect(ctx, natsbox.Options{URL: e.srv.ClientURL(), Local: true})
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(conn.Close)
	js, err := jetstream.New(conn)
	if err != nil {
		e.t.Fatal(err)
	}
	return conn, js
}

func (e *env) onError(err error) {
	e.mu.Lock()
	e.errors = append(e.errors, err)
	e.mu.Unlock()
}

// reported says whether a reported error holds text.
func (e *env) reported(text string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, err := range e.errors {
		if strings.Contains(err.Error(), text) {
			return true
		}
	}
	return false
}

// startServe runs serve on the mailbox until the test ends, with the deny
// terminal.
func (e *env) startServe() { e.startServeWith(serve.Headless{}) }

// startServeWith runs serve with terminal term.
func (e *env) startServeWith(term serve.Terminal) {
	e.t.Helper()
	cfg, err := rules.Load("")
	if err != nil {
		e.t.Fatal(err)
	}
	policy, err := rules.NewPolicy(cfg, rules.Options{Protected: []string{e.layout.Root}})
	if err != nil {
		e.t.Fatal(err)
	}
	b := &serve.Broker{Layout: e.layout, Session: session, Policy: policy, Terminal: term, Log: e.log, SweepInterval: 20 * time.Millisecond}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- b.Run(ctx) }()
	e.t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			e.t.Errorf("serve: %v", err)
		}
	})
}

// running is a bridge started by startBridge.
type running struct {
	b      *Bridge
	cancel context.CancelFunc
	done   chan error
}

// stop ends the bridge and returns what Run returned.
func (r *running) stop() error {
	r.cancel()
	select {
	case err := <-r.done:
		r.done <- err
		return err
	case <-time.After(wait):
		panic("the bridge did not stop")
	}
}

// newBridge is a bridge on the env's engine, through its own connection.
func (e *env) newBridge() *Bridge {
	conn, js := e.connect()
	return &Bridge{JS: js, Conn: conn, Layout: e.layout, Session: session, Log: e.log, OnError: e.onError, Holder: "test bridge"}
}

// startBridge runs b until it is stopped or the test ends, and waits
// until it serves.
func (e *env) startBridge(b *Bridge) *running {
	e.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{b: b, cancel: cancel, done: make(chan error, 1)}
	go func() { r.done <- b.Run(ctx) }()
	e.t.Cleanup(func() { r.stop() })
	select {
	case <-b.Serving():
	case err := <-r.done:
		e.t.Fatalf("the bridge did not start: %v", err)
	case <-time.After(wait):
		e.t.Fatal("the bridge did not start")
	}
	return r
}

// request is a child's request bytes for the serving session.
func request(t *testing.T, value string) (wire.Request, []byte) {
	t.Helper()
	id, err := forward.NewRequestID()
	if err != nil {
		t.Fatal(err)
	}
	req, err := forward.Ask{Session: "child-1", Agent: "Explore", Surface: "bash", Value: value, Cwd: "/w"}.Request(id, session, time.Now().UnixMilli())
	if err != nil {
		t.Fatal(err)
	}
	// A NATS child sends no pid: its broker cannot probe it.
	req.RequesterPID = 0
	return req, encode(t, req)
}

func encode(t *testing.T, req wire.Request) []byte {
	t.Helper()
	data, err := wire.EncodeRequest(req)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// listen subscribes to owner's response subject for id, as a child does
// before it publishes.
func (e *env) listen(owner, id string) *nats.Subscription {
	e.t.Helper()
	subject, err := natsbox.ResponseSubject(session, owner, id)
	if err != nil {
		e.t.Fatal(err)
	}
	sub, err := e.conn.SubscribeSync(subject)
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { sub.Unsubscribe() })
	if err := e.conn.Flush(); err != nil {
		e.t.Fatal(err)
	}
	return sub
}

// publish puts raw request bytes on subject with msgID, as a child does.
func (e *env) publish(subject, msgID string, data []byte) {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	var opts []jetstream.PublishOpt
	if msgID != "" {
		opts = append(opts, jetstream.WithMsgID(msgID))
	}
	if _, err := e.js.Publish(ctx, subject, data, opts...); err != nil {
		e.t.Fatalf("publish %s: %v", subject, err)
	}
}

// ask publishes data as owner's request id, with the child's msg id.
func (e *env) ask(owner, id string, data []byte) {
	e.t.Helper()
	subject, err := natsbox.RequestSubject(session, owner, id)
	if err != nil {
		e.t.Fatal(err)
	}
	msgID, err := natsbox.MsgID(session, owner, id)
	if err != nil {
		e.t.Fatal(err)
	}
	e.publish(subject, msgID, data)
}

// answer waits for the next message on sub.
func answer(t *testing.T, sub *nats.Subscription) []byte {
	t.Helper()
	msg, err := sub.NextMsg(wait)
	if err != nil {
		t.Fatalf("no answer on %s: %v", sub.Subject, err)
	}
	return msg.Data
}

// decode decodes a response and checks it is bound to data's request.
func decode(t *testing.T, got []byte, req wire.Request, data []byte) wire.Response {
	t.Helper()
	resp, _, err := wire.DecodeResponse(got)
	if err != nil {
		t.Fatalf("answer %s: %v", got, err)
	}
	if err := wire.CheckBinding(resp, req.ID, wire.RequestDigest(data), true); err != nil {
		t.Fatalf("answer %s: %v", got, err)
	}
	return resp
}

// logLine is one review-log line.
type logLine map[string]any

func (e *env) lines(event string) []logLine {
	e.t.Helper()
	data, err := os.ReadFile(e.logPath)
	if err != nil {
		e.t.Fatal(err)
	}
	var out []logLine
	for l := range strings.SplitSeq(strings.TrimSpace(string(data)), "\n") {
		if l == "" {
			continue
		}
		var m logLine
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			e.t.Fatalf("%s: %v", l, err)
		}
		if m["event"] == event {
			out = append(out, m)
		}
	}
	return out
}

// eventually waits, within the bound, for cond to hold.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(wait)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s", what, wait)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// pending is how many messages the request stream still holds.
func (e *env) pending() uint64 {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	s, err := e.js.Stream(ctx, natsbox.StreamRequests)
	if err != nil {
		e.t.Fatal(err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		e.t.Fatal(err)
	}
	return info.State.Msgs
}

// exists reports whether path is there.
func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}
