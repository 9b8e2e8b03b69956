package natsbox

import (
	"context"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// Defaults of the layout (Config's zero values).
const (
	// DefaultRequestMaxAge is how long an untaken request is kept: pi's
	// forwarding timeout, after which its child has given up anyway.
	DefaultRequestMaxAge = 10 * time.Minute
	// DefaultResponseTTL is how long a response is kept for a child that
	// reconnects.
	DefaultResponseTTL = 10 * time.Minute
	// DefaultServingTTL is the serving bucket's MaxAge: a heartbeat nobody
	// rewrites disappears, though it is judged stale long before.
	DefaultServingTTL = 30 * time.Second
	// DefaultLeaseTTL is the lease bucket's MaxAge: a dead holder's lease
	// lapses this long after its last renewal.
	DefaultLeaseTTL = 15 * time.Second
	// LeaseRenewInterval is how often a holder renews its lease.
	LeaseRenewInterval = 5 * time.Second
	// HeartbeatInterval and HeartbeatStaleAfter are the mailbox's (pi's)
	// heartbeat timing, asserted equal by a test.
	HeartbeatInterval   = time.Second
	HeartbeatStaleAfter = 5 * time.Second
	// DuplicateWindow is how long a Nats-Msg-Id is remembered.
	DuplicateWindow = 2 * time.Minute
)

// Config sizes the layout. Zero fields take the defaults above.
type Config struct {
	// Replicas is each stream's and bucket's replica count (1 on one node,
	// 3 in a three-node cluster).
	Replicas int
	// ResponseTTL is how long COURIER_RESPONSES keeps a response.
	ResponseTTL time.Duration
	// RequestMaxAge is how long COURIER_REQUESTS keeps an untaken request.
	RequestMaxAge time.Duration
	// ServingTTL is courier_serving's MaxAge.
	ServingTTL time.Duration
	// LeaseTTL is courier_lease's MaxAge; renewals must come more often.
	LeaseTTL time.Duration
}

func (c Config) withDefaults() Config {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	if c.Replicas <= 0 {
		c.Replicas = 1
	}
	def(&c.ResponseTTL, DefaultResponseTTL)
	def(&c.RequestMaxAge, DefaultRequestMaxAge)
	def(&c.ServingTTL, DefaultServingTTL)
	def(&c.LeaseTTL, DefaultLeaseTTL)
	return c
}

// RequestsStream is COURIER_REQUESTS's configuration: a work queue (a
// request is removed once a broker acknowledges it), on file so it outlives
// a broker or server restart, deduplicated by Nats-Msg-Id.
func RequestsStream(cfg Config) jetstream.StreamConfig {
	cfg = cfg.withDefaults()
	return jetstream.StreamConfig{
		Name:        StreamRequests,
		Description: "courier requests, taken by the serving broker",
		Subjects:    []string{SubjectRoot + "." + KindRequest + ".>"},
		Retention:   jetstream.WorkQueuePolicy,
		Storage:     jetstream.FileStorage,
		Replicas:    cfg.Replicas,
		MaxAge:      cfg.RequestMaxAge,
		Duplicates:  min(DuplicateWindow, cfg.RequestMaxAge),
		MaxMsgSize:  MaxMsgSize,
	}
}

// ResponsesStream is COURIER_RESPONSES's configuration: the last response
// per subject, kept ResponseTTL, readable by direct get.
func ResponsesStream(cfg Config) jetstream.StreamConfig {
	cfg = cfg.withDefaults()
	return jetstream.StreamConfig{
		Name:              StreamResponses,
		Description:       "courier responses, kept for a reconnecting child",
		Subjects:          []string{SubjectRoot + "." + KindResponse + ".>"},
		Retention:         jetstream.LimitsPolicy,
		Storage:           jetstream.FileStorage,
		Replicas:          cfg.Replicas,
		MaxAge:            cfg.ResponseTTL,
		MaxMsgsPerSubject: 1,
		AllowDirect:       true,
		Duplicates:        min(DuplicateWindow, cfg.ResponseTTL),
		MaxMsgSize:        MaxMsgSize,
	}
}

// Bounds of COURIER_GONE. A gone message has no body (a child's is
// empty), so anything larger is not one; and the stream is never consumed,
// so an owner publishing gone messages for made-up ids would fill the
// engine's disk for their whole age without a bound on the stream: past
// it the oldest go first, which costs at most an ask decided for a child
// that gave up long ago.
const (
	maxGoneSize  = 256
	maxGoneMsgs  = 100_000
	maxGoneBytes = 16 << 20
)

// GoneStream is COURIER_GONE's configuration: the last gone message per
// request, kept as long as a request is (a request older than that is
// never delivered), readable by direct get. A child's plain publish on its
// gone subject is stored whether or not a broker listens.
func GoneStream(cfg Config) jetstream.StreamConfig {
	cfg = cfg.withDefaults()
	return jetstream.StreamConfig{
		Name:              StreamGone,
		Description:       "courier withdrawals: the asks whose child gave up",
		Subjects:          []string{SubjectRoot + "." + KindGone + ".>"},
		Retention:         jetstream.LimitsPolicy,
		Storage:           jetstream.FileStorage,
		Replicas:          cfg.Replicas,
		MaxAge:            cfg.RequestMaxAge,
		MaxMsgsPerSubject: 1,
		MaxMsgs:           maxGoneMsgs,
		MaxBytes:          maxGoneBytes,
		Discard:           jetstream.DiscardOld,
		AllowDirect:       true,
		MaxMsgSize:        maxGoneSize,
	}
}

func servingBucket(cfg Config) jetstream.KeyValueConfig {
	cfg = cfg.withDefaults()
	return jetstream.KeyValueConfig{
		Bucket:      BucketServing,
		Description: "courier heartbeats, key = session token",
		History:     1,
		TTL:         cfg.ServingTTL,
		Storage:     jetstream.FileStorage,
		Replicas:    cfg.Replicas,
	}
}

func leaseBucket(cfg Config) jetstream.KeyValueConfig {
	cfg = cfg.withDefaults()
	return jetstream.KeyValueConfig{
		Bucket:      BucketLease,
		Description: "courier broker leases, one broker per session",
		History:     1,
		TTL:         cfg.LeaseTTL,
		Storage:     jetstream.FileStorage,
		Replicas:    cfg.Replicas,
	}
}

// Ensure creates the three streams and both buckets, or updates them to cfg
// when they exist with other settings. The broker calls it; a child never
// needs the permission. A change JetStream cannot make in place (say, a
// stream's retention) is an error naming the stream.
func Ensure(ctx context.Context, js jetstream.JetStream, cfg Config) error {
	for _, sc := range []jetstream.StreamConfig{RequestsStream(cfg), ResponsesStream(cfg), GoneStream(cfg)} {
		if _, err := js.CreateOrUpdateStream(ctx, sc); err != nil {
			return fmt.Errorf("natsbox: ensure stream %s: %w", sc.Name, err)
		}
	}
	for _, kc := range []jetstream.KeyValueConfig{servingBucket(cfg), leaseBucket(cfg)} {
		if _, err := js.CreateOrUpdateKeyValue(ctx, kc); err != nil {
			return fmt.Errorf("natsbox: ensure bucket %s: %w", kc.Bucket, err)
		}
	}
	return nil
}
