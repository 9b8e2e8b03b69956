// Package natsbridge is a broker's intake over a NATS JetStream engine.
// It carries the asks of children that share no filesystem with the
// broker into its own file inbox, and their answers back, so that the
// serve loop (rules, chain, terminal, fairness, bounds, binding,
// provenance) serves them unchanged (docs/decisions/0029).
//
// For each request message on the session's subjects (natsbox): checked
// (the session, the owner, the body a request of this session whose id is
// the subject's and names a file serve reads, no requester pid, an id no
// file request holds; an owner past its share of asks in flight waits in
// the stream, so that it cannot crowd out the others), a marker
// naming its owner is written under <root>/courier/nats-bridge, then the
// request file with the message's exact bytes, then the message is
// acknowledged: the inbox is the durable hand-over. The response file
// serve writes is published, byte for byte, to the owner's response
// subject (the engine keeps it for a child that reconnects), and only
// once the engine confirmed it are the file and the marker removed.
//
// An ask is answered once: a message delivered again (the engine's
// redelivery after a broker was killed, or a second publish) is
// acknowledged and nothing else when its answer is kept on the response
// subject or its request or response is still in the inbox.
//
// The bridge holds the session's lease in the engine (one broker per
// session through it, beside the filesystem lock that holds one per
// root), publishes the heartbeat children judge liveness by, and
// withdraws an ask whose child said it gave up (a gone message) by
// removing its request file, which serve's sweep notices.
package natsbridge
