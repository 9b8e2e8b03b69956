package natsbridge

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/seed6639df8c/courier/mailbox"
	"github.com/seed6639df8c/courier/natsbox"
	"github.com/seed6639df8c/courier/reviewlog"
	"github.com/seed6639df8c/courier/wire"
)

// Defaults of the Bridge's knobs.
const (
	// DefaultBatch is how many request messages one fetch asks for.
	DefaultBatch = 64
	// DefaultMaxInFlight bounds the requests bridged and not yet
	// answered. Past it the bridge fetches nothing: a flood waits in the
	// stream (file storage, MaxAge), not in the broker's memory or inbox.
	// It is above serve's own bound on waiting asks (DefaultMaxPending),
	// which answers a flood "unavailable" before this one holds it back.
	DefaultMaxInFlight = 4096
	// DefaultMaxInFlightPerOwner bounds the asks of one owner bridged
	// and not yet answered. Past it that owner's messages go back to the
	// stream for later and the bridge reads on, so that one owner's
	// flood ahead in the stream does not hold back the asks of the
	// others (the stream alone is first come, first served). A quarter
	// of serve's DefaultMaxPending: one owner cannot fill serve's bound
	// on waiting asks alone.
	DefaultMaxInFlightPerOwner = 256
	// ackWait is how long the engine waits for an ack before it delivers
	// a message again. A redelivery is deduplicated (the inbox, the
	// marker, the kept answer), so it only costs a look; a long wait
	// costs the asks a fetch delivered to a connection that then died or
	// stalled (a cluster node lost under a frozen broker: 28 s in the
	// soak with 30 s here). Messages are handled one after the other and
	// acked at the latest when their batch is flushed, well within it.
	ackWait = 5 * time.Second
	// fetchWait bounds one fetch, so that a stop is noticed.
	fetchWait = time.Second
	// sweepEvery is how often markers whose ask ended without an answer
	// (withdrawn, or refused by serve) are looked for.
	sweepEvery = 2 * time.Second
	// stopFlush bounds the last publishing of answers when Run stops.
	stopFlush = 5 * time.Second
	// opTimeout bounds one engine round trip (an ack, a direct get, a
	// refusal's publish, the lease, the heartbeat).
	opTimeout = 5 * time.Second
	// publishers publish answers in parallel.
	publishers = 4
)

// Bridge carries one session's asks between a JetStream engine and the
// broker's file inbox. Set the fields, then call Run once.
type Bridge struct {
	// JS is JetStream on Conn; natsbox.Ensure has made its streams and
	// buckets.
	JS jetstream.JetStream
	// Conn carries the gone messages (core NATS).
	Conn *nats.Conn
	// Layout is the broker's mailbox, the one serve serves.
	Layout mailbox.Layout
	// Session is the serving session id.
	Session string
	// Log receives the review entries; nil logs nothing.
	Log *reviewlog.Log
	// OnError hears of problems worth an operator's eye; nil discards.
	OnError func(error)
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Holder describes this broker in the lease, for the message of a
	// broker the lease keeps out (e.g. "pid 123 on host"); "" is the pid.
	Holder string
	// EarlierRun, when set, reports whether a lease held as holder was
	// taken by an earlier run of this same broker (cmd/broker: the same
	// host and root, whose filesystem lock this broker now holds, so that
	// run has ended, unless two machines share a host name and a root
	// path). Run then waits for that lease to lapse, at most the lease's
	// age, instead of refusing at once: a broker restarted after a
	// SIGKILL serves again within seconds. nil refuses at once.
	EarlierRun func(holder string) bool
	// StopIntake, when closed, stops taking requests while answers are
	// still published until Run's ctx ends: a broker stops its intake
	// when it begins to stop, and its bridge when serve answered
	// everything. nil takes requests until ctx ends.
	StopIntake <-chan struct{}
	// Batch, MaxInFlight and MaxInFlightPerOwner: 0 means DefaultBatch,
	// DefaultMaxInFlight, DefaultMaxInFlightPerOwner.
	Batch, MaxInFlight, MaxInFlightPerOwner int
	// Watch configures how responses/ is watched.
	Watch mailbox.WatchOptions

	session string // normalized
	// consumerName is this run's consumer on the request stream
	// (consumer): made once, kept when the consumer is made again.
	consumerName string
	marks        markers
	serving      chan struct{}
	once         sync.Once

	// Test hooks: afterWrite runs once a request file is written, before
	// the ack, and returning false skips the ack (a broker killed there);
	// beforePublish runs before an answer is published; afterKept runs
	// once a message's kept answer was looked for and none found; ackWait,
	// when set, replaces the engine's redelivery delay; takes counts the
	// messages handled.
	afterWrite    func(id string) bool
	beforePublish func(id string)
	afterKept     func(id string)
	ackWait       time.Duration
	takes         atomic.Int64

	mu     sync.Mutex
	byID   map[string]*marker              // bridged, not yet answered
	owned  map[string]int                  // how many of byID each owner has
	absent map[string]int                  // sweeps that found neither file of a marker
	gone   map[string]map[string]time.Time // by owner, by id token: gone messages for asks not bridged (yet)
	goneN  int                             // entries in gone
	freed  chan struct{}                   // a marker was removed: room to fetch
}

func (b *Bridge) now() time.Time {
	if b.Now != nil {
		return b.Now()
	}
	return time.Now()
}

func (b *Bridge) report(err error) {
	if err != nil && b.OnError != nil {
		b.OnError(err)
	}
}

func (b *Bridge) log(e reviewlog.Entry) {
	if err := b.Log.Emit(e); err != nil {
		b.report(err)
	}
}

func (b *Bridge) init() {
	b.once.Do(func() { b.serving = make(chan struct{}) })
}

// Serving is closed once Run holds the lease and takes requests: a broker
// starts serving its inbox only then, and not at all if Run returned an
// error first (another broker holds the session).
func (b *Bridge) Serving() <-chan struct{} {
	b.init()
	return b.serving
}

// Run bridges until ctx ends, then publishes the answers serve wrote
// meanwhile (for up to a few seconds), withdraws the heartbeat and
// releases the lease. It returns an error when it could not start (the
// lease is held by another broker, the engine refused the consumer) or
// when it lost the lease to another broker.
func (b *Bridge) Run(ctx context.Context) error {
	b.init()
	session, err := mailbox.NormalizeSessionID(b.Session)
	if err != nil {
		return fmt.Errorf("nats bridge: %w", err)
	}
	b.session = session
	holder := b.Holder
	if holder == "" {
		holder = fmt.Sprintf("pid %d", os.Getpid())
	}
	lease, err := b.acquireFirst(ctx, holder)
	if err != nil {
		return fmt.Errorf("nats bridge: session %q: %w", session, err)
	}
	cons, sub, err := b.prepare(ctx)
	if err != nil {
		b.releaseLease(lease)
		return fmt.Errorf("nats bridge: %w", err)
	}
	defer sub.Unsubscribe()
	return b.serve(ctx, cons, lease, holder)
}

// prepare readies the inbox, the markers left by a broker that stopped or
// was killed, the engine's consumer and the gone subscription, once the
// lease is held.
func (b *Bridge) prepare(ctx context.Context) (jetstream.Consumer, *nats.Subscription, error) {
	err := b.Layout.EnsureInbox(b.session)
	if err != nil {
		return nil, nil, err
	}
	if b.marks, err = newMarkers(b.Layout, b.session); err != nil {
		return nil, nil, err
	}
	b.byID, b.owned, b.absent, b.gone = map[string]*marker{}, map[string]int{}, map[string]int{}, map[string]map[string]time.Time{}
	b.freed = make(chan struct{}, 1)
	for _, m := range b.marks.load(b.report) {
		_, _, err := b.boundAnswer(&m)
		m.answeredEarlier = err == nil
		b.mark(&m)
	}
	cons, err := b.consumer(ctx)
	if err != nil {
		return nil, nil, err
	}
	sub, err := b.subscribeGone()
	if err != nil {
		return nil, nil, err
	}
	return cons, sub, nil
}

// serve runs the bridge's parts until ctx ends or the lease is lost, then
// publishes the answers serve wrote meanwhile, withdraws the heartbeat and
// releases the lease.
func (b *Bridge) serve(ctx context.Context, cons jetstream.Consumer, lease *natsbox.Lease, holder string) error {
	responses, err := b.Layout.ResponsesDir(b.session)
	if err != nil {
		return fmt.Errorf("nats bridge: %w", err)
	}
	life, stopLife := context.WithCancelCause(ctx)
	defer stopLife(nil)
	b.beat(life)
	close(b.serving)

	var wg sync.WaitGroup
	watcher := b.newWatcher(responses)
	wg.Go(func() { watcher.Run(life) })
	for range publishers {
		wg.Go(func() { b.publishLoop(life, watcher) })
	}
	wg.Go(func() { b.intake(life, cons, holder) })
	wg.Go(func() { b.sweepLoop(life) })
	var lost error
	wg.Go(func() { lease, lost = b.keepAlive(life, lease, holder, stopLife) })
	wg.Go(func() { b.heartbeatLoop(life) })
	wg.Wait()

	flush, cancel := context.WithTimeout(context.Background(), stopFlush)
	b.publishAll(flush)
	cancel()
	b.withdrawHeartbeat()
	if lost == nil {
		b.releaseLease(lease)
	}
	return lost
}

// acquireFirst takes the lease when Run starts: at once, or, when it is
// held by an earlier run of this broker (EarlierRun), by taking it over
// from that run (natsbox.TakeOverLease: only if it still reads as that
// run's), so a broker restarted after a SIGKILL serves at once rather than
// after the lease's age.
func (b *Bridge) acquireFirst(ctx context.Context, holder string) (*natsbox.Lease, error) {
	lease, err := acquire(ctx, b.JS, b.session, holder)
	if !errors.Is(err, natsbox.ErrLeaseHeld) || b.EarlierRun == nil {
		return lease, err
	}
	who, ok := leaseHolder(ctx, b.JS, b.session)
	if !ok || !b.EarlierRun(who) {
		return nil, err
	}
	op, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	lease, err = natsbox.TakeOverLease(op, b.JS, b.session, who, holder)
	if err == nil {
		b.report(fmt.Errorf("nats bridge: took over the lease of session %q from an earlier run of this broker (%s)", b.session, who))
	}
	return lease, err
}

// leaseHolder is the description the session's lease was taken with.
func leaseHolder(ctx context.Context, js jetstream.JetStream, session string) (string, bool) {
	key, err := natsbox.Token(session)
	if err != nil {
		return "", false
	}
	op, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	kv, err := js.KeyValue(op, natsbox.BucketLease)
	if err != nil {
		return "", false
	}
	e, err := kv.Get(op, key)
	if err != nil {
		return "", false
	}
	return string(e.Value()), true
}

// acquire takes the session's lease; one held by a broker that is alive
// says who holds it.
func acquire(ctx context.Context, js jetstream.JetStream, session, holder string) (*natsbox.Lease, error) {
	op, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	return natsbox.AcquireLease(op, js, session, holder)
}

func (b *Bridge) releaseLease(lease *natsbox.Lease) {
	op, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	if err := lease.Release(op); err != nil {
		b.report(fmt.Errorf("nats bridge: releasing the lease: %w", err))
	}
}

// keepAlive renews the lease until ctx ends, and returns the lease it
// holds then. A lease that lapsed (the engine was away longer than the
// bucket's age) is taken again; one another broker took meanwhile ends
// the bridge with that error: two brokers must not serve one session.
// Any other failure (the engine unreachable) is reported and tried again.
func (b *Bridge) keepAlive(ctx context.Context, lease *natsbox.Lease, holder string, stop context.CancelCauseFunc) (*natsbox.Lease, error) {
	t := time.NewTicker(natsbox.LeaseRenewInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return lease, nil
		case <-t.C:
		}
		op, cancel := context.WithTimeout(ctx, opTimeout)
		err := lease.Renew(op)
		cancel()
		switch {
		case err == nil || ctx.Err() != nil:
			continue
		case !errors.Is(err, natsbox.ErrLeaseLost):
			b.report(fmt.Errorf("nats bridge: renewing the lease: %w", err))
			continue
		}
		again, aerr := acquire(ctx, b.JS, b.session, holder)
		switch {
		case aerr == nil:
			lease = again
		case errors.Is(aerr, natsbox.ErrLeaseHeld):
			lost := fmt.Errorf("nats bridge: lost the lease of session %q: %w", b.session, aerr)
			stop(lost)
			return nil, lost
		default:
			b.report(fmt.Errorf("nats bridge: %v; taking it again: %w", err, aerr))
		}
	}
}

// heartbeat is this broker's record, as the file heartbeat has it.
func (b *Bridge) heartbeat() wire.Heartbeat {
	return wire.Heartbeat{SessionID: b.session, PID: os.Getpid(), UpdatedAt: b.now().UnixMilli(), ResponseBinding: wire.BindingSHA256}
}

// beat publishes the heartbeat once.
func (b *Bridge) beat(ctx context.Context) {
	op, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	if err := natsbox.PublishHeartbeat(op, b.JS, b.session, b.heartbeat()); err != nil && ctx.Err() == nil {
		b.report(fmt.Errorf("nats bridge: heartbeat: %w", err))
	}
}

func (b *Bridge) heartbeatLoop(ctx context.Context) { every(ctx, mailbox.HeartbeatInterval, b.beat) }

// withdrawHeartbeat deletes the record, which tells children at once
// that nobody serves.
func (b *Bridge) withdrawHeartbeat() {
	op, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	if err := withdrawHeartbeat(op, b.JS, b.session); err != nil {
		b.report(fmt.Errorf("nats bridge: withdrawing the heartbeat: %w", err))
	}
}

// withdrawHeartbeat deletes the session's key in the serving bucket; a
// reader finds no record, as after a file heartbeat's removal.
func withdrawHeartbeat(ctx context.Context, js jetstream.JetStream, session string) error {
	key, err := natsbox.Token(session)
	if err != nil {
		return err
	}
	kv, err := js.KeyValue(ctx, natsbox.BucketServing)
	if err != nil {
		return fmt.Errorf("bucket %s: %w", natsbox.BucketServing, err)
	}
	if err := kv.Delete(ctx, key); err != nil {
		return fmt.Errorf("bucket %s, key %s: %w", natsbox.BucketServing, key, err)
	}
	return nil
}

// consumer is the session's durable pull consumer on the request stream.
func (b *Bridge) consumer(ctx context.Context) (jetstream.Consumer, error) {
	filter, err := natsbox.SessionRequestFilter(b.session)
	if err != nil {
		return nil, err
	}
	tok, err := natsbox.Token(b.session)
	if err != nil {
		return nil, err
	}
	op, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	if b.consumerName == "" {
		var run [8]byte
		if _, err := rand.Read(run[:]); err != nil {
			return nil, fmt.Errorf("naming the consumer: %w", err)
		}
		b.consumerName = consumerPrefix + tok + "-" + hex.EncodeToString(run[:])
	}
	name := b.consumerName
	// Made anew at each start, under the lease: the messages an earlier
	// run took and never acknowledged (it died before their files were
	// written) are delivered at once, not after the earlier consumer's
	// AckWait. A work queue keeps a message until it is acknowledged, so
	// deleting a consumer loses none, and the ones bridged already are
	// found in the inbox and acked. The name is this run's own: a broker
	// whose lease lapsed meanwhile then fails its next fetch (its
	// consumer is gone) instead of fetching this one's asks from a
	// consumer of the same name.
	if err := b.dropSessionConsumers(op, filter); err != nil {
		return nil, err
	}
	cons, err := b.JS.CreateOrUpdateConsumer(op, natsbox.StreamRequests, jetstream.ConsumerConfig{
		Durable:       name,
		Description:   "courier broker of session " + b.session,
		FilterSubject: filter,
		AckPolicy:     jetstream.AckExplicitPolicy,
		AckWait:       cmp.Or(b.ackWait, ackWait),
		DeliverPolicy: jetstream.DeliverAllPolicy,
		// Unbounded: the bridge fetches no more than it has room for,
		// and the messages of an owner past its share wait out their
		// delay as pending (a nak with a delay keeps a message pending):
		// a bound here would let them stop every other owner's.
		MaxAckPending: -1,
	})
	if err != nil {
		return nil, fmt.Errorf("the consumer of %s on %s: %w", filter, natsbox.StreamRequests, err)
	}
	return cons, nil
}

// consumerPrefix begins the name of every broker's consumer on the request
// stream; the rest is the session's token and the run's own random part.
const consumerPrefix = "courier-broker-"

// dropSessionConsumers deletes every consumer of the request stream that
// takes this session's requests: an earlier run's, or one of a broker
// whose lease lapsed. Another session's are left alone (compared by
// filter, never by a name prefix, which one session's token could share
// with another's). A work queue allows one such consumer at a time.
func (b *Bridge) dropSessionConsumers(ctx context.Context, filter string) error {
	stream, err := b.JS.Stream(ctx, natsbox.StreamRequests)
	if err != nil {
		return fmt.Errorf("the stream %s: %w", natsbox.StreamRequests, err)
	}
	var drop []string
	list := stream.ListConsumers(ctx)
	for info := range list.Info() {
		if info.Config.FilterSubject == filter || slices.Contains(info.Config.FilterSubjects, filter) {
			drop = append(drop, info.Name)
		}
	}
	if err := list.Err(); err != nil {
		return fmt.Errorf("listing the consumers of %s: %w", natsbox.StreamRequests, err)
	}
	for _, name := range drop {
		if err := stream.DeleteConsumer(ctx, name); err != nil && !errors.Is(err, jetstream.ErrConsumerNotFound) {
			return fmt.Errorf("resetting the consumer %s on %s: %w", name, natsbox.StreamRequests, err)
		}
	}
	return nil
}

func (b *Bridge) batch() int {
	if b.Batch > 0 {
		return b.Batch
	}
	return DefaultBatch
}

func (b *Bridge) maxInFlightPerOwner() int {
	if b.MaxInFlightPerOwner > 0 {
		return b.MaxInFlightPerOwner
	}
	return DefaultMaxInFlightPerOwner
}

func (b *Bridge) maxInFlight() int {
	if b.MaxInFlight > 0 {
		return b.MaxInFlight
	}
	return DefaultMaxInFlight
}

func (b *Bridge) newWatcher(dir string) *mailbox.Watcher {
	opts := b.Watch
	if opts.OnError == nil {
		opts.OnError = func(err error) { b.report(fmt.Errorf("nats bridge: watching %s: %w", dir, err)) }
	}
	return mailbox.NewWatcher(dir, opts)
}
