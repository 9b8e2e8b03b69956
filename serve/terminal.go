package serve

import (
	"context"

	"github.com/seed6639df8c/courier/decision"
	"github.com/seed6639df8c/courier/mailbox"
	"github.com/seed6639df8c/courier/rules"
)

// Ask is what reaches the terminal: the request and why the rules asked.
type Ask struct {
	Request mailbox.Request
	// Resolution is the recorded authority's answer (an ask), or the zero
	// Decision when the request carried no accessIntent (the ask floor).
	Resolution rules.Decision
}

// Terminal decides the asks that neither the rules nor the chain decided:
// a human, a relay to the broker's own parent, or nobody.
//
// Decide must return promptly once ctx is done (the child gave up, or the
// broker is stopping); whatever it returns then is discarded.
type Terminal interface {
	Decide(ctx context.Context, ask Ask) decision.Decision
}

// ReasonNoHuman is the headless terminal's answer.
const ReasonNoHuman = "No human is available at this broker to answer permission requests"

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
	Resolve(ctx context.Context, req mailbox.Request) (decision.Decision, bool)
}
