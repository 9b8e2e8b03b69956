package natsbox

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/seed6639df8c/courier/natsembed"
	"github.com/seed6639df8c/courier/wire"
)

// user is one authenticated connection of the permission layout, with the
// server's asynchronous errors (permission violations) collected.
type user struct {
	name string
	nc   *nats.Conn
	js   jetstream.JetStream
	errs chan error
}

func connectUser(t *testing.T, url, name string, extra Options) *user {
	t.Helper()
	pw := filepath.Join(t.TempDir(), name+".pw")
	if err := os.WriteFile(pw, []byte(name+"-pw\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	u := &user{name: name, errs: make(chan error, 64)}
	opts := extra
	opts.URL, opts.User, opts.PasswordFile, opts.Name = url, name, pw, name
	opts.Extra = []nats.Option{nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
		select {
		case u.errs <- err:
		default:
		}
	})}
	nc, err := Connect(testCtx(t), opts)
	if err != nil {
		t.Fatalf("Connect as %s: %v", name, err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	u.nc, u.js = nc, js
	return u
}

// denied runs act and waits, with a deadline, for the server's permissions
// violation naming subject: a refusal observed, not a silence assumed.
func (u *user) denied(t *testing.T, what, op, subject string, act func(ctx context.Context) error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(testCtx(t), 3*time.Second)
	defer cancel()
	actErr := make(chan error, 1)
	go func() { actErr <- act(ctx) }()
	// A subject ending in "." names a prefix (the API call nats.go picks).
	want := strings.ToLower("permissions violation for " + op + ` to "` + subject)
	if !strings.HasSuffix(subject, ".") {
		want += `"`
	}
	for {
		select {
		case err := <-u.errs:
			if strings.Contains(strings.ToLower(err.Error()), want) {
				// The call itself may wait for an answer that will not come.
				cancel()
				if aerr := <-actErr; aerr == nil && op == "publish" {
					t.Errorf("%s: %s: the call reported success despite the violation", u.name, what)
				}
				return
			}
			t.Logf("%s: other async error while waiting: %v", u.name, err)
		case <-ctx.Done():
			t.Fatalf("%s: %s: no permissions violation for %s to %q within 3s", u.name, what, op, subject)
		}
	}
}

func publishFlush(u *user, subject string) func(context.Context) error {
	return func(ctx context.Context) error {
		if err := u.nc.Publish(subject, []byte("x")); err != nil {
			return err
		}
		if err := u.nc.FlushWithContext(ctx); err != nil {
			return err
		}
		return errors.New("published; the refusal comes asynchronously")
	}
}

func startLayout(t *testing.T, conf string) *natsembed.Server {
	t.Helper()
	ctx := testCtx(t)
	srv, err := natsembed.Start(ctx, natsembed.Options{Port: -1, StoreDir: t.TempDir(), ConfigFile: conf})
	if err != nil {
		t.Fatalf("natsembed.Start with %s: %v", conf, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
	})
	return srv
}

func TestPermissionsLayout(t *testing.T) {
	srv := startLayout(t, "testdata/permissions.conf")
	checkLayoutPermissions(t, srv.ClientURL(), Options{})
}

// checkLayoutPermissions proves testdata/permissions.conf's promises over
// url; tlsOpts carries a TLS client's CA and certificate.
func checkLayoutPermissions(t *testing.T, url string, tlsOpts Options) {
	ctx := testCtx(t)
	withInbox := func(prefix string) Options { o := tlsOpts; o.InboxPrefix = prefix; return o }
	broker := connectUser(t, url, "broker", tlsOpts)
	alice := connectUser(t, url, "alice", withInbox("_INBOX_alice"))
	bob := connectUser(t, url, "bob", withInbox("_INBOX_bob"))
	const session = "sess.1"

	// The broker sets the layout up, announces itself and takes the lease.
	if err := Ensure(ctx, broker.js, Config{}); err != nil {
		t.Fatalf("broker Ensure: %v", err)
	}
	now := time.Now()
	if err := PublishHeartbeat(ctx, broker.js, session, wire.Heartbeat{SessionID: session, PID: 7, UpdatedAt: now.UnixMilli()}); err != nil {
		t.Fatalf("broker PublishHeartbeat: %v", err)
	}
	lease, err := AcquireLease(ctx, broker.js, session, "broker test")
	if err != nil {
		t.Fatalf("broker AcquireLease: %v", err)
	}
	if err := lease.Renew(ctx); err != nil {
		t.Fatalf("broker Renew: %v", err)
	}
	gone, err := broker.nc.SubscribeSync("courier.gone.>")
	if err != nil {
		t.Fatal(err)
	}
	broker.nc.FlushWithContext(ctx)

	// alice reads the heartbeat, listens for her answer, then asks.
	if s, err := ReadServing(ctx, alice.js, session, now); err != nil || !s.Alive {
		t.Fatalf("alice ReadServing = %+v, %v; want alive", s, err)
	}
	aliceResp, _ := ResponseSubject(session, "alice", "r1")
	answers, err := alice.nc.SubscribeSync(aliceResp)
	if err != nil {
		t.Fatal(err)
	}
	alice.nc.FlushWithContext(ctx)
	aliceReq, _ := RequestSubject(session, "alice", "r1")
	msgID, _ := MsgID(session, "alice", "r1")
	if _, err := alice.js.Publish(ctx, aliceReq, []byte(`{"ask":1}`), jetstream.WithMsgID(msgID)); err != nil {
		t.Fatalf("alice publish %s: %v", aliceReq, err)
	}

	// What alice must not do, each refusal seen.
	bobReq, _ := RequestSubject(session, "bob", "r2")
	bobResp, _ := ResponseSubject(session, "bob", "r2")
	alice.denied(t, "request as bob", "publish", bobReq, publishFlush(alice, bobReq))
	alice.denied(t, "forge a response", "publish", aliceResp, publishFlush(alice, aliceResp))
	alice.denied(t, "read bob's answer", "subscription", bobResp, func(ctx context.Context) error {
		_, err := alice.nc.SubscribeSync(bobResp)
		return err
	})
	alice.denied(t, "read others' requests", "subscription", "courier.req.>", func(ctx context.Context) error {
		_, err := alice.nc.SubscribeSync("courier.req.>")
		return err
	})
	alice.denied(t, "read bob's replies", "subscription", "_INBOX_bob.>", func(ctx context.Context) error {
		_, err := alice.nc.SubscribeSync("_INBOX_bob.>")
		return err
	})
	alice.denied(t, "direct-get bob's answer", "publish", "$JS.API.DIRECT.GET.COURIER_RESPONSES."+bobResp, func(ctx context.Context) error {
		data, ok, err := LastResponse(ctx, alice.js, bobResp)
		if ok || data != nil {
			t.Errorf("alice read bob's kept answer: %q", data)
		}
		return err
	})
	sessTok, _ := Token(session)
	alice.denied(t, "forge a heartbeat", "publish", "$KV.courier_serving."+sessTok, func(ctx context.Context) error {
		return PublishHeartbeat(ctx, alice.js, session, wire.Heartbeat{SessionID: session, PID: 8, UpdatedAt: now.UnixMilli()})
	})
	alice.denied(t, "change the layout", "publish", "$JS.API.STREAM.", func(ctx context.Context) error {
		return Ensure(ctx, alice.js, Config{})
	})
	alice.denied(t, "take the lease", "publish", "$JS.API.STREAM.INFO.KV_courier_lease", func(ctx context.Context) error {
		_, err := AcquireLease(ctx, alice.js, session, "alice")
		return err
	})
	alice.denied(t, "consume the request stream", "publish", "$JS.API.CONSUMER.", func(ctx context.Context) error {
		_, err := alice.js.CreateOrUpdateConsumer(ctx, StreamRequests, jetstream.ConsumerConfig{Durable: "steal", FilterSubject: "courier.req.>"})
		return err
	})
	bob.denied(t, "request as alice", "publish", aliceReq, publishFlush(bob, aliceReq))
	goneAsAlice, _ := GoneSubject(session, "alice", "r1")
	bob.denied(t, "withdraw alice's ask", "publish", goneAsAlice, publishFlush(bob, goneAsAlice))

	// The broker takes alice's request, answers, and sees her withdrawal.
	filter, _ := SessionRequestFilter(session)
	cons, err := broker.js.CreateOrUpdateConsumer(ctx, StreamRequests, jetstream.ConsumerConfig{Durable: "serve-test", FilterSubject: filter, AckPolicy: jetstream.AckExplicitPolicy})
	if err != nil {
		t.Fatalf("broker consumer: %v", err)
	}
	batch, err := cons.Fetch(10, jetstream.FetchMaxWait(2*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	var took []string
	for m := range batch.Messages() {
		took = append(took, m.Subject()+" "+string(m.Data()))
		if err := m.DoubleAck(ctx); err != nil {
			t.Fatalf("broker ack: %v", err)
		}
	}
	if len(took) != 1 || took[0] != aliceReq+` {"ask":1}` {
		t.Fatalf("broker took %q; want only alice's request (bob's forgery must not be stored)", took)
	}
	if _, err := broker.js.Publish(ctx, aliceResp, []byte("yes"), jetstream.WithMsgID(msgID)); err != nil {
		t.Fatalf("broker publish response: %v", err)
	}
	if m, err := answers.NextMsgWithContext(ctx); err != nil || string(m.Data) != "yes" {
		t.Fatalf("alice's subscription got %v, %v; want yes", m, err)
	}
	if data, ok, err := LastResponse(ctx, alice.js, aliceResp); err != nil || !ok || string(data) != "yes" {
		t.Fatalf("alice LastResponse = %q, %v, %v; want yes", data, ok, err)
	}
	aliceGone, _ := GoneSubject(session, "alice", "r1")
	if err := alice.nc.Publish(aliceGone, nil); err != nil {
		t.Fatal(err)
	}
	if m, err := gone.NextMsgWithContext(ctx); err != nil || m.Subject != aliceGone {
		t.Fatalf("broker's gone subscription got %v, %v; want %s", m, err, aliceGone)
	}
	// The forged heartbeat never landed.
	if s, err := ReadServing(ctx, broker.js, session, now); err != nil || s.Heartbeat.PID != 7 {
		t.Fatalf("heartbeat after alice's attempt = %+v, %v; want the broker's (pid 7)", s, err)
	}
	if err := lease.Release(ctx); err != nil {
		t.Fatalf("broker Release: %v", err)
	}
}
