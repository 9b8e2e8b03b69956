package natsbox

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

func TestLease(t *testing.T) {
	e := ensured(t, Config{})
	ctx := testCtx(t)
	const session = "sess.lease"
	a, err := AcquireLease(ctx, e.js, session, "broker A pid 1")
	if err != nil {
		t.Fatalf("first AcquireLease: %v", err)
	}
	_, err = AcquireLease(ctx, e.js, session, "broker B pid 2")
	if !errors.Is(err, ErrLeaseHeld) || !strings.Contains(err.Error(), "broker A pid 1") {
		t.Fatalf("second AcquireLease = %v; want ErrLeaseHeld naming broker A", err)
	}
	for range 3 {
		if err := a.Renew(ctx); err != nil {
			t.Fatalf("Renew: %v", err)
		}
	}
	if _, err := AcquireLease(ctx, e.js, session, "broker B pid 2"); !errors.Is(err, ErrLeaseHeld) {
		t.Fatalf("AcquireLease after renewals = %v; want ErrLeaseHeld", err)
	}
	if other, err := AcquireLease(ctx, e.js, "another session", "broker B pid 2"); err != nil {
		t.Fatalf("another session's lease: %v", err)
	} else {
		other.Release(ctx)
	}
	if err := a.Release(ctx); err != nil {
		t.Fatalf("Release: %v", err)
	}
	b, err := AcquireLease(ctx, e.js, session, "broker B pid 2")
	if err != nil {
		t.Fatalf("AcquireLease after Release: %v", err)
	}
	if err := a.Renew(ctx); !errors.Is(err, ErrLeaseLost) {
		t.Errorf("released holder's Renew = %v; want ErrLeaseLost", err)
	}
	if err := a.Release(ctx); !errors.Is(err, ErrLeaseLost) {
		t.Errorf("released holder's second Release = %v; want ErrLeaseLost", err)
	}
	if err := b.Renew(ctx); err != nil {
		t.Errorf("new holder's Renew after the old one's attempts: %v", err)
	}
	if b.Holder() != "broker B pid 2" {
		t.Errorf("Holder = %q", b.Holder())
	}
}

// A holder that stops renewing loses the lease after the bucket's MaxAge,
// and learns it at its next Renew.
func TestLeaseLapses(t *testing.T) {
	const ttl = time.Second
	e := ensured(t, Config{LeaseTTL: ttl})
	ctx := testCtx(t)
	const session = "s-lapse"
	a, err := AcquireLease(ctx, e.js, session, "broker A")
	if err != nil {
		t.Fatal(err)
	}
	taken := time.Now()
	// Poll, with a deadline, for the moment another broker can take it.
	deadline, cancel := context.WithTimeout(ctx, 10*ttl)
	defer cancel()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	var b *Lease
	for b == nil {
		b, err = AcquireLease(deadline, e.js, session, "broker B")
		if err != nil && !errors.Is(err, ErrLeaseHeld) {
			t.Fatalf("AcquireLease while waiting: %v", err)
		}
		if b != nil {
			break
		}
		select {
		case <-deadline.Done():
			t.Fatalf("lease not lapsed %s after it was taken with MaxAge %s", time.Since(taken), ttl)
		case <-tick.C:
		}
	}
	if lapsed := time.Since(taken); lapsed < ttl {
		t.Errorf("lease taken over after %s, before MaxAge %s", lapsed, ttl)
	} else {
		t.Logf("lease lapsed and was taken over after %s (MaxAge %s)", lapsed.Round(time.Millisecond), ttl)
	}
	if err := a.Renew(ctx); !errors.Is(err, ErrLeaseLost) {
		t.Errorf("lapsed holder's Renew = %v; want ErrLeaseLost", err)
	}
	if err := b.Renew(ctx); err != nil {
		t.Errorf("new holder's Renew: %v", err)
	}
}

// Renewing more often than MaxAge keeps the lease past several MaxAges.
func TestLeaseRenewKeeps(t *testing.T) {
	const ttl = time.Second
	e := ensured(t, Config{LeaseTTL: ttl})
	ctx := testCtx(t)
	a, err := AcquireLease(ctx, e.js, "s-keep", "broker A")
	if err != nil {
		t.Fatal(err)
	}
	tick := time.NewTicker(ttl / 4)
	defer tick.Stop()
	end := time.Now().Add(3 * ttl)
	for time.Now().Before(end) {
		<-tick.C
		if err := a.Renew(ctx); err != nil {
			t.Fatalf("Renew: %v", err)
		}
		if _, err := AcquireLease(ctx, e.js, "s-keep", "broker B"); !errors.Is(err, ErrLeaseHeld) {
			t.Fatalf("AcquireLease of a renewed lease = %v; want ErrLeaseHeld", err)
		}
	}
}

// A broker restarted on the same host and root takes its dead run's lease
// at once, and only that run's: a lease held as anyone else, or taken by
// another between the look and the write, stays where it is.
func TestTakeOverLease(t *testing.T) {
	e := ensured(t, Config{})
	ctx := testCtx(t)
	const session = "sess.takeover"
	old, err := AcquireLease(ctx, e.js, session, "broker pid 1 on h, root /r")
	if err != nil {
		t.Fatalf("AcquireLease: %v", err)
	}
	if _, err := TakeOverLease(ctx, e.js, session, "broker pid 7 on h, root /r", "broker pid 2 on h, root /r"); !errors.Is(err, ErrLeaseHeld) {
		t.Fatalf("TakeOverLease from a holder that is not the lease's = %v; want ErrLeaseHeld", err)
	}
	l, err := TakeOverLease(ctx, e.js, session, "broker pid 1 on h, root /r", "broker pid 2 on h, root /r")
	if err != nil {
		t.Fatalf("TakeOverLease from the earlier run: %v", err)
	}
	if err := old.Renew(ctx); !errors.Is(err, ErrLeaseLost) {
		t.Fatalf("the earlier run's Renew after the takeover = %v; want ErrLeaseLost", err)
	}
	if _, err := AcquireLease(ctx, e.js, session, "broker pid 3 on g, root /r"); !errors.Is(err, ErrLeaseHeld) || !strings.Contains(err.Error(), "pid 2") {
		t.Fatalf("AcquireLease after the takeover = %v; want ErrLeaseHeld naming pid 2", err)
	}
	if err := l.Renew(ctx); err != nil {
		t.Fatalf("Renew of the taken-over lease: %v", err)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatalf("Release: %v", err)
	}
	fresh, err := TakeOverLease(ctx, e.js, session, "broker pid 2 on h, root /r", "broker pid 4 on h, root /r")
	if err != nil {
		t.Fatalf("TakeOverLease of a released lease: %v", err)
	}
	fresh.Release(ctx)
}
