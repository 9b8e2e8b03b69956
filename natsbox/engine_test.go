package natsbox

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/seed6639df8c/courier/wire"
)

func TestEnsureIdempotent(t *testing.T) {
	e := ensured(t, Config{})
	ctx := testCtx(t)
	if err := Ensure(ctx, e.js, Config{}); err != nil {
		t.Fatalf("second Ensure: %v", err)
	}
	checkLayout(t, e, Config{}.withDefaults())
}

func TestEnsureUpdatesOtherSettings(t *testing.T) {
	e := startEngine(t)
	ctx := testCtx(t)
	// What an older broker, or an operator by hand, might have made.
	if _, err := e.js.CreateStream(ctx, jetstream.StreamConfig{Name: StreamRequests, Subjects: []string{"courier.req.>"}, Retention: jetstream.WorkQueuePolicy, MaxAge: time.Hour, MaxMsgSize: 10}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.js.CreateStream(ctx, jetstream.StreamConfig{Name: StreamResponses, Subjects: []string{"courier.resp.>"}, MaxMsgsPerSubject: 5}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: BucketLease, TTL: time.Hour}); err != nil {
		t.Fatal(err)
	}
	cfg := Config{ResponseTTL: 3 * time.Minute, RequestMaxAge: 4 * time.Minute, LeaseTTL: 7 * time.Second, ServingTTL: 9 * time.Second}
	if err := Ensure(ctx, e.js, cfg); err != nil {
		t.Fatalf("Ensure over other settings: %v", err)
	}
	checkLayout(t, e, cfg.withDefaults())
}

func TestEnsureRefusesRetentionChange(t *testing.T) {
	e := startEngine(t)
	ctx := testCtx(t)
	if _, err := e.js.CreateStream(ctx, jetstream.StreamConfig{Name: StreamRequests, Subjects: []string{"courier.req.>"}}); err != nil {
		t.Fatal(err)
	}
	err := Ensure(ctx, e.js, Config{})
	if err == nil || !strings.Contains(err.Error(), StreamRequests) {
		t.Fatalf("Ensure over a limits-retention request stream = %v; want an error naming %s", err, StreamRequests)
	}
}

func checkLayout(t *testing.T, e *engine, cfg Config) {
	t.Helper()
	ctx := testCtx(t)
	req, err := e.js.Stream(ctx, StreamRequests)
	if err != nil {
		t.Fatal(err)
	}
	rc := req.CachedInfo().Config
	if rc.Retention != jetstream.WorkQueuePolicy || rc.Storage != jetstream.FileStorage || rc.MaxAge != cfg.RequestMaxAge ||
		rc.Duplicates != 2*time.Minute || rc.MaxMsgSize != MaxMsgSize || len(rc.Subjects) != 1 || rc.Subjects[0] != "courier.req.>" {
		t.Errorf("%s config = %+v", StreamRequests, rc)
	}
	resp, err := e.js.Stream(ctx, StreamResponses)
	if err != nil {
		t.Fatal(err)
	}
	pc := resp.CachedInfo().Config
	if pc.Retention != jetstream.LimitsPolicy || pc.MaxMsgsPerSubject != 1 || !pc.AllowDirect || pc.MaxAge != cfg.ResponseTTL ||
		pc.Duplicates != 2*time.Minute || pc.MaxMsgSize != MaxMsgSize || pc.Subjects[0] != "courier.resp.>" {
		t.Errorf("%s config = %+v", StreamResponses, pc)
	}
	for bucket, ttl := range map[string]time.Duration{BucketServing: cfg.ServingTTL, BucketLease: cfg.LeaseTTL} {
		kv, err := e.js.KeyValue(ctx, bucket)
		if err != nil {
			t.Fatalf("bucket %s: %v", bucket, err)
		}
		st, err := kv.Status(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if st.TTL() != ttl || st.History() != 1 {
			t.Errorf("bucket %s: TTL %s history %d, want %s and 1", bucket, st.TTL(), st.History(), ttl)
		}
	}
}

func TestRequestDedupByMsgID(t *testing.T) {
	e := ensured(t, Config{})
	ctx := testCtx(t)
	subj, _ := RequestSubject("s.1", "alice", "r1")
	id, _ := MsgID("s.1", "alice", "r1")
	for range 2 {
		if _, err := e.js.Publish(ctx, subj, []byte(`{"x":1}`), jetstream.WithMsgID(id)); err != nil {
			t.Fatal(err)
		}
	}
	st, _ := e.js.Stream(ctx, StreamRequests)
	info, err := st.Info(ctx)
	if err != nil || info.State.Msgs != 1 {
		t.Fatalf("after a duplicate publish: %d messages, %v; want 1", info.State.Msgs, err)
	}
	big := make([]byte, MaxMsgSize+1)
	if _, err := e.js.Publish(ctx, subj+"x", big); err == nil {
		t.Errorf("a request over MaxMsgSize was stored")
	}
}

func TestHeartbeat(t *testing.T) {
	e := ensured(t, Config{})
	ctx := testCtx(t)
	now := time.Now()
	const session = "sess.one"
	put := func(data []byte) {
		t.Helper()
		key, _ := Token(session)
		if _, err := e.js.Publish(ctx, "$KV."+BucketServing+"."+key, data); err != nil {
			t.Fatal(err)
		}
	}
	hb := func(id string, at time.Time) wire.Heartbeat {
		return wire.Heartbeat{SessionID: id, PID: 4242, UpdatedAt: at.UnixMilli(), ResponseBinding: wire.BindingSHA256}
	}
	tests := []struct {
		name    string
		setup   func()
		alive   bool
		whyHas  string
		binding string
	}{
		{name: "missing", setup: func() {}, whyHas: "no heartbeat"},
		{name: "fresh", setup: func() {
			if err := PublishHeartbeat(ctx, e.js, session, hb(session, now.Add(-time.Second))); err != nil {
				t.Fatal(err)
			}
		}, alive: true, binding: wire.BindingSHA256},
		{name: "stale", setup: func() { PublishHeartbeat(ctx, e.js, session, hb(session, now.Add(-HeartbeatStaleAfter))) }, whyHas: "stale", binding: wire.BindingSHA256},
		{name: "other session", setup: func() { PublishHeartbeat(ctx, e.js, session, hb("sess.two", now)) }, whyHas: `"sess.two"`, binding: wire.BindingSHA256},
		{name: "garbage", setup: func() { put([]byte("\x00{not json")) }, whyHas: "does not decode"},
		{name: "empty", setup: func() { put(nil) }, whyHas: "does not decode"},
		{name: "bad pid", setup: func() { put([]byte(`{"sessionId":"sess.one","pid":-1,"updatedAt":1}`)) }, whyHas: "pid"},
		{name: "hostile updatedAt", setup: func() { put([]byte(`{"sessionId":"sess.one","pid":1,"updatedAt":-9223372036854775808}`)) }, whyHas: ""},
		{name: "deleted", setup: func() {
			kv, _ := e.js.KeyValue(ctx, BucketServing)
			key, _ := Token(session)
			if err := kv.Delete(ctx, key); err != nil {
				t.Fatal(err)
			}
		}, whyHas: "withdrawn"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.setup()
			got, err := ReadServing(ctx, e.js, session, now)
			if err != nil {
				t.Fatalf("ReadServing: %v", err)
			}
			if got.Alive != tc.alive || (!tc.alive && got.Why == "") || !strings.Contains(got.Why, tc.whyHas) {
				t.Fatalf("ReadServing = %+v; want alive %v, why containing %q", got, tc.alive, tc.whyHas)
			}
			if got.Heartbeat.ResponseBinding != tc.binding {
				t.Errorf("binding = %q, want %q", got.Heartbeat.ResponseBinding, tc.binding)
			}
		})
	}
	if err := PublishHeartbeat(ctx, e.js, session, wire.Heartbeat{SessionID: session}); err == nil {
		t.Errorf("PublishHeartbeat without a pid succeeded")
	}
	if _, err := ReadServing(ctx, e.js, "", now); !errors.Is(err, ErrBadToken) {
		t.Errorf("ReadServing of an empty session = %v, want ErrBadToken", err)
	}
}

func TestReadServingWithoutBucket(t *testing.T) {
	e := startEngine(t)
	_, err := ReadServing(testCtx(t), e.js, "s", time.Now())
	if err == nil {
		t.Fatalf("ReadServing without the bucket: no error; want the engine's")
	}
}

func TestLastResponse(t *testing.T) {
	e := ensured(t, Config{})
	ctx := testCtx(t)
	subj, _ := ResponseSubject("s1", "alice", "r1")
	other, _ := ResponseSubject("s1", "alice", "r2")
	if data, ok, err := LastResponse(ctx, e.js, subj); err != nil || ok || data != nil {
		t.Fatalf("LastResponse before any = %q, %v, %v; want none", data, ok, err)
	}
	id, _ := MsgID("s1", "alice", "r1")
	if _, err := e.js.Publish(ctx, subj, []byte("first"), jetstream.WithMsgID(id)); err != nil {
		t.Fatal(err)
	}
	if data, ok, err := LastResponse(ctx, e.js, subj); err != nil || !ok || string(data) != "first" {
		t.Fatalf("LastResponse after one = %q, %v, %v; want first", data, ok, err)
	}
	if _, err := e.js.Publish(ctx, subj, []byte("second")); err != nil {
		t.Fatal(err)
	}
	if _, err := e.js.Publish(ctx, other, []byte("other")); err != nil {
		t.Fatal(err)
	}
	if data, ok, err := LastResponse(ctx, e.js, subj); err != nil || !ok || string(data) != "second" {
		t.Fatalf("LastResponse after two = %q, %v, %v; want second", data, ok, err)
	}
	reqSubj, _ := RequestSubject("s1", "alice", "r1")
	if _, _, err := LastResponse(ctx, e.js, reqSubj); !errors.Is(err, ErrBadToken) {
		t.Errorf("LastResponse on a request subject = %v, want ErrBadToken", err)
	}
}

// A child subscribed before it published gets the response by core NATS,
// and the stream keeps it for a direct get.
func TestResponseSubscriptionAndKeep(t *testing.T) {
	e := ensured(t, Config{})
	ctx := testCtx(t)
	subj, _ := ResponseSubject("s1", "bob", "r9")
	sub, err := e.nc.SubscribeSync(subj)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	if _, err := e.js.Publish(ctx, subj, []byte("answer")); err != nil {
		t.Fatal(err)
	}
	msg, err := sub.NextMsgWithContext(ctx)
	if err != nil || string(msg.Data) != "answer" {
		t.Fatalf("subscription got %v, %v", msg, err)
	}
	if data, ok, err := LastResponse(ctx, e.js, subj); err != nil || !ok || string(data) != "answer" {
		t.Fatalf("LastResponse = %q, %v, %v", data, ok, err)
	}
}

// The work queue hands a session's requests to one consumer: a second
// consumer over the same session is refused by the engine (decision 0027).
func TestWorkQueueRefusesOverlappingConsumers(t *testing.T) {
	e := ensured(t, Config{})
	ctx := testCtx(t)
	filter, _ := SessionRequestFilter("s1")
	if _, err := e.js.CreateOrUpdateConsumer(ctx, StreamRequests, jetstream.ConsumerConfig{Durable: "broker-a", FilterSubject: filter, AckPolicy: jetstream.AckExplicitPolicy}); err != nil {
		t.Fatal(err)
	}
	_, err := e.js.CreateOrUpdateConsumer(ctx, StreamRequests, jetstream.ConsumerConfig{Durable: "broker-b", FilterSubject: filter, AckPolicy: jetstream.AckExplicitPolicy})
	if err == nil {
		t.Fatal("a second consumer over the same session's requests was created")
	}
	t.Logf("second consumer refused: %v", err)
	other, _ := SessionRequestFilter("s2")
	if _, err := e.js.CreateOrUpdateConsumer(ctx, StreamRequests, jetstream.ConsumerConfig{Durable: "broker-c", FilterSubject: other, AckPolicy: jetstream.AckExplicitPolicy}); err != nil {
		t.Fatalf("a consumer over another session: %v", err)
	}
}

// A child's plain publish on its gone subject is kept whether or not a
// broker listens, and found by its own subject only.
func TestKeptGone(t *testing.T) {
	e := ensured(t, Config{})
	ctx := testCtx(t)
	subj, _ := GoneSubject("s1", "alice", "r1")
	other, _ := GoneSubject("s1", "alice", "r2")
	if ok, err := KeptGone(ctx, e.js, subj); err != nil || ok {
		t.Fatalf("KeptGone before any = %v, %v; want false", ok, err)
	}
	if err := e.js.Conn().Publish(subj, nil); err != nil {
		t.Fatal(err)
	}
	if err := e.js.Conn().Flush(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		ok, err := KeptGone(ctx, e.js, subj)
		if err != nil {
			t.Fatal(err)
		}
		if ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("a gone message published with nobody listening was not kept")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if ok, err := KeptGone(ctx, e.js, other); err != nil || ok {
		t.Fatalf("KeptGone of another request = %v, %v; want false", ok, err)
	}
	respSubj, _ := ResponseSubject("s1", "alice", "r1")
	if _, err := KeptGone(ctx, e.js, respSubj); !errors.Is(err, ErrBadToken) {
		t.Fatalf("KeptGone of a response subject = %v; want ErrBadToken", err)
	}
}

// COURIER_GONE is never consumed, so it is bounded as a whole (an owner's
// gone messages for made-up ids would otherwise fill the engine's disk for
// ten minutes), and a body a gone message never has is refused.
func TestGoneStreamIsBounded(t *testing.T) {
	e := ensured(t, Config{})
	ctx := testCtx(t)
	s, err := e.js.Stream(ctx, StreamGone)
	if err != nil {
		t.Fatal(err)
	}
	cfg := s.CachedInfo().Config
	if cfg.MaxMsgs <= 0 || cfg.MaxBytes <= 0 || cfg.Discard != jetstream.DiscardOld {
		t.Fatalf("COURIER_GONE MaxMsgs %d, MaxBytes %d, Discard %v; want both bounded, the oldest discarded", cfg.MaxMsgs, cfg.MaxBytes, cfg.Discard)
	}
	subj, _ := GoneSubject("s1", "alice", "r1")
	if _, err := e.js.Publish(ctx, subj, make([]byte, 1024)); err == nil {
		t.Fatal("a 1 KiB gone message was kept")
	}
}
