// Package relay is the broker terminal of a broker that is itself a
// subagent's session (--terminal relay): what reaches its terminal is
// forwarded one hop up, to its own parent, with the child library (over the
// filesystem mailbox, or over NATS with natsforward: any forward.Forwarder),
// and the parent's answer is relayed down. Provenance nests per hop: the
// originating child sees forwarded → forwarded → decider.
//
// A relaying node runs no authorizer links (one chain per node: the node
// that adjudicates runs its own): Delegation takes the chain's place, and
// logs each ask it lets through to be relayed.
//
// Terminal is a plain serve.Terminal, not a serve.Holder: each pending ask
// keeps a goroutine waiting in the child library for the parent's answer.
package relay

import (
	"context"
	"os"
	"time"

	"github.com/seed6639df8c/courier/decision"
	"github.com/seed6639df8c/courier/forward"
	"github.com/seed6639df8c/courier/serve"
)

// Terminal forwards asks to Parent on behalf of Session.
type Terminal struct {
	// Forwarder does the forwarding: a forward.Client when both hops share
	// a mailbox, a natsforward.Client when the parent's broker is reached
	// over NATS (which sends no requester pid: see Decide).
	Forwarder forward.Forwarder
	// Session is this broker's serving session: the requester one hop up.
	Session string
	// Parent is the session this broker forwards to.
	Parent string
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Decide implements serve.Terminal. The request keeps its id (so every
// hop's review log joins on it), the child-fixed facts and principal (the
// upper broker's rules are scoped to the originating agent), the display
// fields, message, payload and grant suggestion; it names this broker as
// the requester and carries this broker's pid, so the upper broker sweeps
// it if this broker dies (a NATS forwarder clears it: the upper broker
// cannot probe a remote pid, and the ask is withdrawn with a gone message
// instead).
func (t *Terminal) Decide(ctx context.Context, ask serve.Ask) decision.Decision {
	req := ask.Request
	req.RequesterSessionID = t.Session
	req.TargetSessionID = t.Parent
	req.CreatedAt = t.now().UnixMilli()
	req.RequesterPID = os.Getpid()
	return t.Forwarder.Forward(ctx, req)
}

func (t *Terminal) now() time.Time {
	if t.Now != nil {
		return t.Now()
	}
	return time.Now()
}
