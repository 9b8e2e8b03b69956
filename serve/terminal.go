package serve

import (
	"context"

	"github.com/seed6639df8c/courier/decision"
	"github.com/seed6639df8c/courier/rules"
	"github.com/seed6639df8c/courier/wire"
)

// Ask is what reaches the terminal: the request and why the rules asked.
type Ask struct {
	Request wire.Request
	// Resolution is the recorded authority's answer (an ask), or the zero
	// Resolution when the request carried no accessIntent (the ask floor).
	Resolution rules.Resolution
	// Grants are the whole-session grants "yes, for this session" would
	// record: the child's suggestions that the broker admitted (each
	// covers a value of this ask and is no wider than the broker's own
	// suggestion for it). The terminal shows every one of them in full;
	// nil offers no whole-session scope.
	Grants []wire.SuggestedGrant
}

// Terminal decides the asks that neither the rules nor the chain decided:
// a human, a relay to the broker's own parent, or nobody.
//
// Decide must return promptly once ctx is done (the child gave up, the
// prompt timed out, or the broker is stopping); whatever it returns then
// is discarded.
type Terminal interface {
	Decide(ctx context.Context, ask Ask) decision.Decision
}

// ReasonNoHuman is the headless terminal's answer.
const ReasonNoHuman = "No human is available at this broker to answer permission requests"

// Holder is a Terminal that keeps the asks it is given itself, in a queue
// a human works through, instead of needing a goroutine blocked in Decide
// for each. When the broker's Terminal is a Holder, asks reach it through
// Hold and Decide is not called: asks held by the thousand cost the broker
// no goroutine each, and no context each (see
// docs/decisions/0008-held-asks.md).
//
// Hold takes the ask and returns at once, without waiting for a decision,
// with a function that withdraws the ask. It must then call done exactly
// once: with its decision, or, promptly once withdraw is called (the child
// gave up, the prompt timed out, the broker is stopping; cause says which)
// if it has not decided by then, with any decision, which the broker
// discards. done never blocks (the broker concludes the ask on a goroutine
// of its own) and may be called on any goroutine, before Hold returns
// included. withdraw may be called from any goroutine, any number of
// times, also after done; it must not block.
//
// ask is the broker's, shared rather than copied because thousands may be
// held: the terminal must not modify it, and may keep it until it calls
// done.
type Holder interface {
	Terminal
	Hold(ask *Ask, done func(decision.Decision)) (withdraw func(cause error))
}

// Headless is the terminal of a broker with nobody at it (--terminal
// deny): every ask is unavailable, never a user's denial.
type Headless struct{}

// Decide implements Terminal.
func (Headless) Decide(context.Context, Ask) decision.Decision {
	return decision.NobodyAnswered(ReasonNoHuman)
}

// Chain is the authorizer chain between the rules and the terminal.
type Chain interface {
	// Resolve returns the decision of the first link that allowed or
	// denied, and false when every link deferred.
	Resolve(ctx context.Context, req wire.Request) (decision.Decision, bool)
}
