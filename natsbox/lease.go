package natsbox

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"
)

// ErrLeaseHeld is AcquireLease's refusal: another broker serves the
// session. It is wrapped with the holder's description.
var ErrLeaseHeld = errors.New("natsbox: session lease held by another broker")

// ErrLeaseLost is Renew's error when the lease is no longer this holder's:
// it lapsed (no renewal for the bucket's MaxAge) and perhaps another broker
// took it. The holder must stop serving.
var ErrLeaseLost = errors.New("natsbox: session lease lost")

// Lease is one broker's hold on a session in courier_lease, the engine's
// counterpart of the mailbox's session lock. Renew it every
// LeaseRenewInterval; Release it on a clean stop. Not safe for concurrent
// use.
type Lease struct {
	kv      jetstream.KeyValue
	session string
	key     string
	holder  string
	rev     uint64
}

// AcquireLease takes session's lease for holder (a description such as
// "broker pid 4242 on host-a", shown to whoever is refused). It fails with
// ErrLeaseHeld, naming the holder, while another holds it.
func AcquireLease(ctx context.Context, js jetstream.JetStream, session, holder string) (*Lease, error) {
	key, err := Token(session)
	if err != nil {
		return nil, fmt.Errorf("natsbox: lease session: %w", err)
	}
	if holder == "" {
		return nil, errors.New("natsbox: lease holder description is empty")
	}
	ctx, cancel := bounded(ctx)
	defer cancel()
	kv, err := js.KeyValue(ctx, BucketLease)
	if err != nil {
		return nil, fmt.Errorf("natsbox: lease bucket %s: %w", BucketLease, err)
	}
	rev, err := kv.Create(ctx, key, []byte(holder))
	if errors.Is(err, jetstream.ErrKeyExists) {
		who := "unknown holder"
		if e, gerr := kv.Get(ctx, key); gerr == nil {
			who = fmt.Sprintf("%q since %s", e.Value(), e.Created().UTC().Format("2006-01-02T15:04:05Z"))
		}
		return nil, fmt.Errorf("%w: session %s: %s", ErrLeaseHeld, session, who)
	}
	if err != nil {
		return nil, fmt.Errorf("natsbox: acquire lease of %s: %w", session, err)
	}
	return &Lease{kv: kv, session: session, key: key, holder: holder, rev: rev}, nil
}

// Holder is the description the lease was taken with.
func (l *Lease) Holder() string { return l.holder }

// Renew rewrites the lease if it is still this holder's, which restarts
// the bucket's MaxAge; ErrLeaseLost when it is not.
func (l *Lease) Renew(ctx context.Context) error {
	ctx, cancel := bounded(ctx)
	defer cancel()
	rev, err := l.kv.Update(ctx, l.key, []byte(l.holder), l.rev)
	if err != nil {
		if isWrongRevision(err) {
			return fmt.Errorf("%w: session %s (held as %q): %v", ErrLeaseLost, l.session, l.holder, err)
		}
		return fmt.Errorf("natsbox: renew lease of %s: %w", l.session, err)
	}
	l.rev = rev
	return nil
}

// Release deletes the lease if it is still this holder's, so that another
// broker may take the session at once.
func (l *Lease) Release(ctx context.Context) error {
	ctx, cancel := bounded(ctx)
	defer cancel()
	if err := l.kv.Delete(ctx, l.key, jetstream.LastRevision(l.rev)); err != nil {
		if isWrongRevision(err) {
			return fmt.Errorf("%w: session %s: not released, no longer ours: %v", ErrLeaseLost, l.session, err)
		}
		return fmt.Errorf("natsbox: release lease of %s: %w", l.session, err)
	}
	return nil
}

// isWrongRevision reports JetStream's refusal of a write whose expected
// last revision is not the key's.
func isWrongRevision(err error) bool {
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) && apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence {
		return true
	}
	return errors.Is(err, jetstream.ErrKeyExists)
}

// TakeOverLease takes session's lease from a holder the caller knows has
// ended (a broker restarted on the same host and root, whose filesystem
// lock it now holds): the lease is rewritten for holder only if it still
// reads earlier, checked by its revision, so that a third broker which
// took it meanwhile keeps it. Waiting for the lease to lapse instead would
// keep a broker restarted after a SIGKILL from serving for the lease's
// whole age. ErrLeaseHeld when the lease is held as anything but earlier.
func TakeOverLease(ctx context.Context, js jetstream.JetStream, session, earlier, holder string) (*Lease, error) {
	key, err := Token(session)
	if err != nil {
		return nil, fmt.Errorf("natsbox: lease session: %w", err)
	}
	if holder == "" || earlier == "" {
		return nil, errors.New("natsbox: lease holder description is empty")
	}
	ctx, cancel := bounded(ctx)
	defer cancel()
	kv, err := js.KeyValue(ctx, BucketLease)
	if err != nil {
		return nil, fmt.Errorf("natsbox: lease bucket %s: %w", BucketLease, err)
	}
	e, err := kv.Get(ctx, key)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return AcquireLease(ctx, js, session, holder)
	}
	if err != nil {
		return nil, fmt.Errorf("natsbox: read lease of %s: %w", session, err)
	}
	if string(e.Value()) != earlier {
		return nil, fmt.Errorf("%w: session %s: %q, not %q", ErrLeaseHeld, session, e.Value(), earlier)
	}
	rev, err := kv.Update(ctx, key, []byte(holder), e.Revision())
	if err != nil {
		if isWrongRevision(err) {
			// Changed since it was read: lapsed (free now: taken as any
			// free lease is), or taken by another broker (held).
			return AcquireLease(ctx, js, session, holder)
		}
		return nil, fmt.Errorf("natsbox: take over lease of %s: %w", session, err)
	}
	return &Lease{kv: kv, session: session, key: key, holder: holder, rev: rev}, nil
}
