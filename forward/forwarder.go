package forward

import (
	"context"

	"github.com/seed6639df8c/courier/decision"
	"github.com/seed6639df8c/courier/wire"
)

// Forwarder is the child library over any transport: it hands one
// request to the target session's broker and waits for the decision.
// Client does it through the filesystem mailbox; natsforward.Client
// through a NATS JetStream engine. Every implementation keeps Client's
// promises (see the package doc): it always returns a decision, never
// allows on its own, accepts only an answer bound to the bytes it sent,
// and says unavailable with pi's reason, never a user's denial, when
// nobody answered. A relaying broker forwards through one without knowing
// which transport carries the ask.
type Forwarder interface {
	Forward(ctx context.Context, req wire.Request) decision.Decision
}

var _ Forwarder = (*Client)(nil)
