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
	// conversation supplies the serving session's user intent to links
	// that disclose it; nil means the broker has none.
	conversation func() *authorizer.Conversation

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

// WithConversation sets where the serving session's conversation comes
// from (the broker's --intent transcript). The chain calls it at most once
// per ask, and only when some link the ask reaches discloses
// "conversation", so an ask no such link sees costs no read of the
// transcript; every link of one ask sees the same snapshot. It must be
// safe for concurrent use and return promptly: it runs on the ask's path.
// nil (the default) means no link ever gets a conversation.
func WithConversation(f func() *authorizer.Conversation) Option {
	return func(c *Chain) { c.conversation = f }
}

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

	conv := c.snapshot()
	for _, m := range c.members {
		if m.Mode == Shadow {
			c.startShadow(m, req, conv)
		}
	}
	for _, m := range c.members {
		if m.Mode == Shadow {
			continue
		}
		if d, ok := c.consult(ctx, m, req, conv); ok {
			return d, true
		}
	}
	return decision.Decision{}, false
}

// snapshot returns the conversation provider of one ask: the chain's,
// called at most once however many links disclose it, or nil. A provider
// that panics gives no conversation: it may be called first on a shadow
// link's goroutine, where nothing else would recover, and a transcript
// the broker cannot read must not take the broker down.
func (c *Chain) snapshot() func() *authorizer.Conversation {
	if c.conversation == nil {
		return nil
	}
	return sync.OnceValue(func() (conv *authorizer.Conversation) {
		defer func() {
			if r := recover(); r != nil {
				c.logger.Error().Interface("panic", r).Msg("reading the serving session's conversation failed; links get none")
				conv = nil
			}
		}()
		return c.conversation()
	})
}

// outcome is one consultation of one link, after the failure policy and
// the envelope.
type outcome struct {
	verdict authorizer.Verdict // what counts
	raw     authorizer.Verdict // what the link said, when it said anything
	err     error              // why it could not judge
	capped  bool               // the envelope turned an allow into a defer
	latency time.Duration      // the call's wall time
	// code, reason and meta are what the link said of its verdict,
	// cleaned and bounded, for the review log: the reason of a deny or a
	// defer (an allow's is dropped), the code and the metadata of any
	// answer, even one the envelope capped.
	code, reason string
	meta         authorizer.Meta
}

// ask calls one link and applies its failure policy and the envelope.
func (c *Chain) ask(ctx context.Context, m Member, req wire.Request, conv func() *authorizer.Conversation) outcome {
	ev := authorizer.ProjectWithConversation(req, m.Disclose, conv)
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
	o.code, o.meta = authorizer.CleanCode(v.Code), authorizer.CleanMeta(v.Meta)
	if v.Kind != authorizer.Allow {
		o.reason = authorizer.CleanReason(v.Reason)
	}
	// The verdict that counts carries a deny's reason only: a defer's
	// reason is for the trail, never for the child.
	counted := authorizer.Verdict{Kind: v.Kind}
	if v.Kind == authorizer.Deny {
		counted.Reason = o.reason
	}
	o.verdict, o.capped = authorizer.Envelope(counted, ev)
	return o
}

// consult asks one enforcing link and logs its verdict; ok reports that the
// link decided.
func (c *Chain) consult(ctx context.Context, m Member, req wire.Request, conv func() *authorizer.Conversation) (decision.Decision, bool) {
	o := c.ask(ctx, m, req, conv)
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
func (c *Chain) startShadow(m Member, req wire.Request, conv func() *authorizer.Conversation) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return
	}
	c.shadow.Add(1)
	go func() {
		defer c.shadow.Done()
		o := c.ask(c.shadowCtx, m, req, conv)
		c.write(reviewlog.LinkShadowEntry(linkEntry(req.ID, m.Link.Name(), o)))
	}()
}

// linkEntry is the review entry of one consultation. It holds the
// link's code, reason and metadata as cleaned, and never any of the
// evidence (the conversation above all).
func linkEntry(requestID, name string, o outcome) reviewlog.LinkVerdictEntry {
	e := reviewlog.LinkVerdictEntry{
		RequestID:      requestID,
		Name:           name,
		Verdict:        o.verdict.Kind.String(),
		LatencyMs:      float64(o.latency.Microseconds()) / 1000,
		Code:           o.code,
		Model:          o.meta.Model,
		PromptVersion:  o.meta.PromptVersion,
		InputTokens:    o.meta.InputTokens,
		OutputTokens:   o.meta.OutputTokens,
		ModelLatencyMs: o.meta.LatencyMs,
	}
	switch {
	case o.verdict.Kind == authorizer.Deny && o.err != nil:
		e.Reason = o.verdict.Reason
	case o.err == nil:
		e.Reason = o.reason
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
