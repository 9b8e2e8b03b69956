package chain

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/seed6639df8c/courier/authorizer"
	"github.com/seed6639df8c/courier/decision"
	"github.com/seed6639df8c/courier/provenance"
	"github.com/seed6639df8c/courier/reviewlog"
	"github.com/seed6639df8c/courier/wire"
)

// Link is one authorizer in the chain.
//
// Authorize must be safe for concurrent use and must return by the
// deadline of ctx or its own, whichever is sooner; a link that runs a
// process (package plugins) enforces its configured timeout itself. An
// error means the link could not judge the ask: the chain then applies the
// member's failure verdict, never allow. Errors should wrap one of this
// package's sentinels (ErrTimeout, ErrUnavailable, ...) or
// [authorizer.ErrInvalidVerdict], so the reason the child reads can say
// what happened without quoting the link.
//
// A Link that also implements io.Closer is closed by [Chain.Close].
type Link interface {
	// Name is the configured name, used in decidedBy and the review log.
	Name() string
	// Authorize judges one ask.
	Authorize(ctx context.Context, ev authorizer.Evidence) (authorizer.Verdict, error)
}

// Mode is whether a link's verdicts count.
type Mode uint8

// The two modes.
const (
	// Enforce: the link's allow or deny decides the ask.
	Enforce Mode = iota
	// Shadow: the link is consulted and its verdict logged as
	// authorizer_link.shadow, never enforced, so an operator can judge a
	// new authorizer against real traffic first.
	Shadow
)

// String returns "enforce" or "shadow".
func (m Mode) String() string {
	if m == Shadow {
		return "shadow"
	}
	return "enforce"
}

// Member is a link as configured in one chain.
type Member struct {
	Link Link
	Mode Mode
	// Disclose is what this link may see beyond the child-fixed facts.
	Disclose authorizer.Disclosure
	// OnFailure is the verdict when the link fails: Deny or Defer. Any
	// other value is read as Deny, so a mistake can never allow.
	OnFailure authorizer.VerdictKind
}

// Chain is the ordered links of one broker node. It is safe for
// concurrent use. A nil or empty Chain resolves nothing.
type Chain struct {
	members []Member
	log     *reviewlog.Log
	logger  zerolog.Logger
	now     func() time.Time

	shadowCtx    context.Context
	cancelShadow context.CancelFunc
	mu           sync.Mutex // guards closed and shadow.Add against Close
	closed       bool
	shadow       sync.WaitGroup
}

// Option configures New.
type Option func(*Chain)

// WithLogger sets the diagnostic logger: review-log write failures and link
// failures are reported there. The default discards.
func WithLogger(l zerolog.Logger) Option { return func(c *Chain) { c.logger = l } }

// WithClock replaces time.Now for latency measurements, for tests.
func WithClock(now func() time.Time) Option { return func(c *Chain) { c.now = now } }

// New builds a chain of members in the given order, which is config order
// and decides. log may be nil (no review log).
func New(log *reviewlog.Log, members []Member, opts ...Option) *Chain {
	c := &Chain{
		members: append([]Member(nil), members...),
		log:     log,
		logger:  zerolog.Nop(),
		now:     time.Now,
	}
	for _, o := range opts {
		o(c)
	}
	c.shadowCtx, c.cancelShadow = context.WithCancel(context.Background())
	return c
}

// Len returns the number of links, shadow links included.
func (c *Chain) Len() int {
	if c == nil {
		return 0
	}
	return len(c.members)
}

// Names returns the link names in config order, shadow links included.
func (c *Chain) Names() []string {
	if c == nil {
		return nil
	}
	names := make([]string, len(c.members))
	for i, m := range c.members {
		names[i] = m.Link.Name()
	}
	return names
}

// Resolve runs the enforcing links in config order; it returns the
// decision of the first link that allows or denies, and false when every
// link deferred (the ask then goes to the terminal). Shadow links are
// started beside them and logged when they answer; they never delay or
// change the result.
//
// An allow is a one-off approval (never approved_for_session) decided by
// {kind: authorizer, verdict: allow}; a deny carries the link's cleaned
// reason. A link that fails yields its failure verdict: a failure that
// denies is decided by {kind: gate_error}, because no link said no.
func (c *Chain) Resolve(ctx context.Context, req wire.Request) (decision.Decision, bool) {
	if c == nil || len(c.members) == 0 {
		return decision.Decision{}, false
	}
	var enforcing, shadows []string
	for _, m := range c.members {
		if m.Mode == Shadow {
			shadows = append(shadows, m.Link.Name())
		} else {
			enforcing = append(enforcing, m.Link.Name())
		}
	}
	c.write(reviewlog.ChainResolvedEntry{RequestID: req.ID, Links: orEmpty(enforcing), ShadowLinks: shadows})

	for _, m := range c.members {
		if m.Mode == Shadow {
			c.startShadow(m, req)
		}
	}
	for _, m := range c.members {
		if m.Mode == Shadow {
			continue
		}
		if d, ok := c.consult(ctx, m, req); ok {
			return d, true
		}
	}
	return decision.Decision{}, false
}

// outcome is one consultation of one link, after the failure policy and
// the envelope.
type outcome struct {
	verdict authorizer.Verdict // what counts
	raw     authorizer.Verdict // what the link said, when it said anything
	err     error              // why it could not judge
	capped  bool               // the envelope turned an allow into a defer
	latency time.Duration      // the call's wall time
}

// ask calls one link and applies its failure policy and the envelope.
func (c *Chain) ask(ctx context.Context, m Member, req wire.Request) outcome {
	ev := authorizer.Project(req, m.Disclose)
	start := c.now()
	v, err := m.Link.Authorize(ctx, ev)
	o := outcome{raw: v, err: err, latency: c.now().Sub(start)}
	switch {
	case err == nil && !v.Kind.Valid():
		o.err = fmt.Errorf("%w: kind %d", authorizer.ErrInvalidVerdict, v.Kind)
		fallthrough
	case o.err != nil:
		o.verdict = failureVerdict(m, o.err)
		return o
	}
	if v.Kind == authorizer.Deny {
		v.Reason = authorizer.CleanReason(v.Reason)
	} else {
		v.Reason = ""
	}
	o.verdict, o.capped = authorizer.Envelope(v, ev)
	return o
}

// consult asks one enforcing link and logs its verdict; ok reports that the
// link decided.
func (c *Chain) consult(ctx context.Context, m Member, req wire.Request) (decision.Decision, bool) {
	o := c.ask(ctx, m, req)
	name := m.Link.Name()
	c.write(linkEntry(req.ID, name, o))
	if o.err != nil {
		c.logger.Warn().Str("link", name).Str("requestId", req.ID).Err(o.err).
			Str("onFailure", o.verdict.Kind.String()).Msg("authorizer link failed")
	}
	switch o.verdict.Kind {
	case authorizer.Allow:
		return decision.Allow(provenance.Authorizer{Name: name, Verdict: provenance.VerdictAllow}), true
	case authorizer.Deny:
		if o.err != nil {
			return decision.Deny(o.verdict.Reason, provenance.GateError{Reason: o.verdict.Reason}), true
		}
		var reason *string
		if o.verdict.Reason != "" {
			reason = provenance.Str(o.verdict.Reason)
		}
		return decision.Deny(o.verdict.Reason, provenance.Authorizer{Name: name, Verdict: provenance.VerdictDeny, Reason: reason}), true
	}
	return decision.Decision{}, false
}

// startShadow consults a shadow link in the background. It uses the
// chain's own context, not the ask's, so a decision made early does not
// cut the shadow call short; the link's timeout bounds it, and Close
// cancels it.
func (c *Chain) startShadow(m Member, req wire.Request) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return
	}
	c.shadow.Add(1)
	go func() {
		defer c.shadow.Done()
		o := c.ask(c.shadowCtx, m, req)
		c.write(reviewlog.LinkShadowEntry(linkEntry(req.ID, m.Link.Name(), o)))
	}()
}

// linkEntry is the review entry of one consultation.
func linkEntry(requestID, name string, o outcome) reviewlog.LinkVerdictEntry {
	e := reviewlog.LinkVerdictEntry{
		RequestID: requestID,
		Name:      name,
		Verdict:   o.verdict.Kind.String(),
		LatencyMs: float64(o.latency.Microseconds()) / 1000,
	}
	if o.verdict.Kind == authorizer.Deny {
		e.Reason = o.verdict.Reason
	}
	if o.capped {
		e.Capped, e.LinkVerdict = true, authorizer.Allow.String()
	}
	if o.err != nil {
		e.Failure, e.Error = failureCause(o.err), o.err
	}
	return e
}

func (c *Chain) write(e reviewlog.Entry) {
	if err := c.log.Emit(e); err != nil {
		c.logger.Error().Err(err).Str("event", e.Event()).Msg("review log write failed")
	}
}

func orEmpty(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// Close stops the chain: in-flight shadow calls are cancelled and waited
// for, then every link that is an io.Closer is closed (plugin processes
// are killed), concurrently. It returns the links' errors joined. Resolve
// after Close consults closed links, which fail into their failure
// verdicts. Closing twice is harmless.
func (c *Chain) Close() error {
	if c == nil {
		return nil
	}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	c.mu.Unlock()
	c.cancelShadow()
	c.shadow.Wait()

	errs := make([]error, len(c.members))
	var wg sync.WaitGroup
	for i, m := range c.members {
		closer, ok := m.Link.(io.Closer)
		if !ok {
			continue
		}
		wg.Go(func() {
			if err := closer.Close(); err != nil {
				errs[i] = fmt.Errorf("close authorizer %q: %w", m.Link.Name(), err)
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}
