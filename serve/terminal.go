package serve

import (
	"context"

	"github.com/seed6639df8c/courier/decision"
	"github.com/seed6639df8c/courier/provenance"
	"github.com/seed6639df8c/courier/rules"
	"github.com/seed6639df8c/courier/wire"
)

// Ask is what reaches the terminal: the request and why the rules asked.
type Ask struct {
	Request wire.Request
	// Resolution is the recorded authority's answer (an ask), or the zero
	// Resolution (Action "") when the rules were not consulted: the
	// request carried no access facts (Request.AccessIntent nil, a pi
	// 20.x child's: NoAccessFacts) and was not matched by its display
	// value (LegacyBashDisplayMatch, bash only; a request so matched has
	// AccessIntent nil and a Resolution). For such an ask a terminal
	// should say why it asks (NoAccessFacts): the operator's rules never
	// saw it. A whole-session grant recorded for it is consulted only
	// for asks that carry access facts, never for the next ask of a 20.x
	// child, which will not carry them either: the terminal should not
	// offer the whole-session scope for it, or should say what it will
	// do. (A subagent-scope grant is the child's to record, not ours,
	// except in the isolation mode, where the broker vouches for it:
	// vouch.go.)
	Resolution rules.Resolution
	// Grants are the whole-session grants "yes, for this session" would
	// record: the child's suggestions that the broker admitted (each
	// covers a value of this ask and is no wider than the broker's own
	// suggestion for it). The terminal shows every one of them in full;
	// nil offers no whole-session scope.
	Grants []wire.SuggestedGrant
	// Isolated says the broker serves in the isolation mode, where
	// RequesterUID is who asked as the transport vouches for it: the uid
	// that owns the request file (only the kernel set it), and
	// RequesterUser its login name ("" when none resolves). In the
	// same-uid mode every request file is the broker's own user's, and
	// the requester is only what it claims. Resolution.AgentTrust says
	// how far its agent name was believed.
	Isolated      bool
	RequesterUID  int
	RequesterUser string
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
// with a function that withdraws the ask. Without a chain, Hold is called
// on the broker's worker that read the ask (no goroutine is started for
// it), so a Hold that blocked would hold up other requests. It must then call done exactly
// once: with its decision, or, promptly once withdraw is called (the child
// gave up, the prompt timed out, the broker is stopping; cause says which)
// if it has not decided by then, with any decision, which the broker
// discards. done never blocks (the broker concludes the ask on a goroutine
// of its own) and may be called on any goroutine, before Hold returns
// included. withdraw may be called from any goroutine, any number of
// times, also after done; it must not block.
//
// ask is the terminal's own copy of the Ask, but what its slices and
// pointers refer to is shared with the broker: the terminal must not
// modify that. The broker keeps only what answering needs (not the
// request's message or payload, which may be a megabyte each), and a
// terminal must not keep ask, or anything that shares its memory, once
// Hold returns: it copies out, within bounds, what it shows (the tty
// prompt keeps about 10 KiB of each; docs/decisions/0013-prompt-fairness.md,
// docs/decisions/0014-fair-share-and-bounds.md).
type Holder interface {
	Terminal
	Hold(ask *Ask, done func(decision.Decision)) (withdraw func(cause error))
}

// Tally is a Terminal that counts the broker's decisions, those it did
// not make included (the tty prompt's "answered" count: the rules', the
// session grants', the chain's). The broker calls Counted with the
// decider of every ask it answers, once the answer is written, on the
// goroutine that wrote it; Counted must not block. A terminal tells its
// own answers apart by their decider (a user) and counts them itself.
type Tally interface {
	Terminal
	Counted(by provenance.Source)
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
