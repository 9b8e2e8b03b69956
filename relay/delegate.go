package relay

import (
	"context"

	"github.com/seed6639df8c/courier/decision"
	"github.com/seed6639df8c/courier/reviewlog"
	"github.com/seed6639df8c/courier/wire"
)

// Delegation is the authorizer chain of a relaying node, in the chain's
// place in the broker (a serve.Chain): it runs no links and defers every
// ask, since the node that adjudicates runs its own (one chain per node,
// pi's ADR 0007 §7). Where an adjudicating node writes
// authorizer_chain_resolved, it writes authorizer_chain_delegated for
// each ask, before the ask is relayed, naming the links configured here
// that it does not run, so that the log says why a link an operator
// configured never answered. With none configured it writes nothing, as
// a chain without links writes no authorizer_chain_resolved.
type Delegation struct {
	// Links are the names of the configured links, in config order.
	Links []string
	// Log receives the entries; nil logs nothing.
	Log *reviewlog.Log
	// OnError hears of an entry that could not be written; nil discards.
	OnError func(error)
}

// Resolve implements serve.Chain: it never decides.
func (d *Delegation) Resolve(_ context.Context, req wire.Request) (decision.Decision, bool) {
	if d == nil || len(d.Links) == 0 {
		return decision.Decision{}, false
	}
	err := d.Log.Emit(reviewlog.ChainDelegatedEntry{RequestID: req.ID, Links: d.Links})
	if err != nil && d.OnError != nil {
		d.OnError(err)
	}
	return decision.Decision{}, false
}
