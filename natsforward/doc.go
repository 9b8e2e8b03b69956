// Package natsforward is the child library over a NATS JetStream engine:
// it forwards one permission ask to a broker that serves its session
// through the engine (natsbridge) and waits for the decision. It keeps
// every promise of package forward, the mailbox child (forward.Forwarder):
//
//   - the request carries the same bytes a request file would hold,
//     published on the session's request subject with a Nats-Msg-Id, so a
//     retried publish is one ask; a publish the engine did not
//     acknowledge is "could not be written", unavailable;
//   - the answer is taken only if it is bound to those bytes
//     (wire.CheckBinding), always: every broker over NATS is courier's
//     bridge, which binds every answer, so no heartbeat (missing, or
//     forged) can make an unbound answer acceptable; any other message on the response subject (a plant,
//     another ask's answer, garbage) is logged and refused, and the wait
//     goes on for the broker's own;
//   - nobody answering (no heartbeat for the forwarding grace, the
//     timeout, the caller's context ending) is unavailable with pi's
//     reason, never a user's denial, and the broker is told with a
//     message on the gone subject, so that it withdraws the ask.
//
// # Liveness without a pid
//
// A request over NATS carries no requesterPid: the broker cannot probe a
// process on another machine. The child's liveness is instead its gone
// message, or the forwarding timeout. The broker's liveness is its
// heartbeat in the courier_serving bucket, judged as the file heartbeat
// is, minus the pid probe.
//
// # Never miss the answer
//
// The response subject is subscribed before the request is published, so
// an answer cannot come before the child listens. One published while the
// child was disconnected is kept by the engine (the responses stream keeps
// the last message of each subject): after every reconnect, after the
// subscription dropped messages, at the first liveness tick and then every
// KeptLookInterval, the child fetches it with one direct get
// (natsbox.LastResponse).
//
// # What waiting costs the engine
//
// Every heartbeat read and every look for the kept answer is a request to
// the engine. With the defaults (DefaultLivenessInterval,
// DefaultKeptLookInterval) a waiting ask makes about 1.2 a second.
package natsforward
