package natsforward

import (
	"context"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/seed6639df8c/courier/decision"
	"github.com/seed6639df8c/courier/forward"
	"github.com/seed6639df8c/courier/reviewlog"
	"github.com/seed6639df8c/courier/wire"
)

// Client forwards asks through one connection to a NATS JetStream engine.
// Conn, JS and Owner are required; the zero value of every other field is
// package forward's default.
//
// A Client may be used by any number of goroutines at once: each Forward
// has its own subscription on its own response subject.
type Client struct {
	// Conn is the connection (natsbox.Connect), which reconnects by
	// itself; JS is JetStream on it.
	Conn *nats.Conn
	JS   jetstream.JetStream
	// Owner is the asking identity's name in the subjects
	// (natsbox.CheckOwner): the engine's permissions let it publish
	// requests and read answers under that name only.
	Owner string
	// Log receives the review entries; nil logs nothing.
	Log *reviewlog.Log
	// Timeout bounds the whole ask, the publish included; 0 means
	// forward.DefaultTimeout. It is the time pi's "did not answer within"
	// names.
	Timeout time.Duration
	// Deadline, when not zero, ends every ask by then if Timeout would
	// end it later: a caller whose time started before the ask (the
	// connection was made within the same --timeout) keeps its deadline
	// and still names its Timeout.
	Deadline time.Time
	// Grace is how long the broker may look not-serving; 0 means
	// forward.DefaultGrace.
	Grace time.Duration
	// LivenessInterval is how often the heartbeat is read while waiting;
	// 0 means DefaultLivenessInterval.
	LivenessInterval time.Duration
	// KeptLookInterval is how often, at most, the kept answer is looked
	// for while connected and nothing suggests a miss; 0 means
	// DefaultKeptLookInterval. A reconnect, or messages the subscription
	// dropped, look at once.
	KeptLookInterval time.Duration
	// Now is the clock the heartbeat is judged by; nil means time.Now.
	Now func() time.Time
	// OnWarning receives problems worth a line on stderr (a refused
	// answer, a failed log write); nil discards them.
	OnWarning func(error)
}

var _ forward.Forwarder = (*Client)(nil)

// Waiting over NATS costs the engine requests, unlike a file watch: every
// read of the heartbeat and every look for the kept answer is a direct
// get. These defaults keep a waiting ask at about 1.2 requests a second
// (a hundred children waiting on humans: 120/s, against 2,000/s when both
// were read every 100 ms, forward's interval).
const (
	// DefaultLivenessInterval is how often a waiting ask reads the
	// heartbeat: as often as the broker writes it
	// (mailbox.HeartbeatInterval). Reading it more often learns nothing
	// that matters sooner: a broker that died is seen only once its record
	// is stale (five seconds without a write), and then has the grace.
	DefaultLivenessInterval = time.Second
	// DefaultKeptLookInterval is how often, at most, a waiting ask looks
	// for the kept answer when nothing suggests it missed one: a safety
	// net for a delivery lost some other way, with this much latency.
	DefaultKeptLookInterval = 5 * time.Second
)

// goneFlushTimeout bounds the wait for the engine to take the gone
// message: the child usually exits right after giving up, and a message
// still in its buffer would be lost with it. It is paid past the ask's
// deadline, so it is short: a reachable engine takes it in a round trip;
// one that does not is partitioned or stalled, and the broker then
// withdraws the ask at its own forwarding timeout.
const goneFlushTimeout = 250 * time.Millisecond

// publishAckTimeout bounds the wait for the engine's acknowledgement of
// the request (within the ask's deadline). It comes in milliseconds from
// a reachable engine, and within seconds across a leader election; one
// that does not come is a request not written, not a broker that did not
// answer: an engine away, a stream missing, or an identity whose replies
// its permissions refuse, which would otherwise hold the ask for its whole
// timeout under the wrong reason. Like nats.go's own default.
const publishAckTimeout = 5 * time.Second

// minOpTimeout is the least time one engine round trip (a heartbeat read,
// a direct get) is given; it never outlasts the ask's own deadline.
const minOpTimeout = time.Second

func (c *Client) now() time.Time {
	if c.Now != nil {
		return c.Now()
	}
	return time.Now()
}

func orDefault(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}

func (c *Client) warn(err error) {
	if err != nil && c.OnWarning != nil {
		c.OnWarning(err)
	}
}

func (c *Client) log(e reviewlog.Entry) {
	if err := c.Log.Emit(e); err != nil {
		c.warn(err)
	}
}

// Unresolved is the decision when no parent session could be resolved,
// logged by forward.Client.Unresolved itself: no mailbox is involved.
func (c *Client) Unresolved(requestID string) decision.Decision {
	return (&forward.Client{Log: c.Log, OnWarning: c.OnWarning}).Unresolved(requestID)
}

// LogLocal writes the terminal entry of an ask a local session grant
// answered without forwarding.
func (c *Client) LogLocal(req wire.Request, d decision.Decision) {
	c.log(forward.LocalEntry(req, d))
}

// Forward publishes req to its target's broker through the engine and
// waits for the answer. It always returns a decision: the broker's, or
// unavailable (see the package doc); ctx ending early gives up with
// forward.ReasonSessionEnded. A bash intent without asking units is given
// them first (forward.FillBashUnits), and the requester's pid is cleared:
// the broker could not probe it.
func (c *Client) Forward(ctx context.Context, req wire.Request) decision.Decision {
	if ai := req.AccessIntent; ai != nil && ai.Surface == "bash" && len(ai.AskingUnits) == 0 {
		// A copy, so the caller's request stays as given.
		filled := *ai
		forward.FillBashUnits(&filled)
		req.AccessIntent = &filled
	}
	req.RequesterPID = 0
	timeout := orDefault(c.Timeout, forward.DefaultTimeout)
	deadline := time.Now().Add(timeout)
	if !c.Deadline.IsZero() && c.Deadline.Before(deadline) {
		deadline = c.Deadline
	}
	x := &exchange{c: c, req: req, timeout: timeout, deadline: deadline}
	defer x.close()
	if d, ok := x.open(); !ok {
		return d
	}
	if d, ok := x.publish(ctx); !ok {
		return d
	}
	return x.await(ctx)
}
