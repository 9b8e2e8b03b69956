// Package forward is the requesting side of courier: it forwards one
// permission ask to a parent session's broker through the mailbox and
// waits for the decision. The child command is a thin shell around it, and
// a relaying broker uses it to pass an ask one hop further up.
//
// # Never hang, never pretend
//
// Forward always returns a decision. When nobody answers (no parent, a
// parent not serving for Grace, the overall Timeout, an unreadable answer)
// the decision is a denial whose decider is provenance.Unavailable with
// pi's exact sentence as the reason, never a user's denial; the request is
// deleted first, so a late answer cannot arrive for an ask already given up.
//
// A parent's liveness is judged from its heartbeat only once an answer
// has been awaited for LivenessInterval: an answer that comes sooner
// proves the parent serves, and most do. Whether the parent binds its
// answers (see below) is read from the heartbeat only for an answer that
// carries no binding.
//
// # Event-driven
//
// The watch on responses/ is armed before the request is written, so the
// answer cannot slip in between, and the wait is woken by inotify (or the
// polling fallback), not by a 250 ms tick. The Forwards of one Client share
// one inotify instance and one goroutine, which hands each arriving file
// name to the Forward waiting for it: requesters in one process cost one
// wake-up per answer, where watches of their own would each be woken by
// every answer in the directory. Where inotify cannot be had (the per-user
// instance limit) or the Client polls, each Forward watches on its own.
// Close releases the shared watch; an idle one is released by itself.
//
// A process that makes one ask and exits (child ask, child hook) sets
// PollFirst: it looks for the answer at short intervals for a moment
// before arming any watch, because a process that had an inotify watch
// waits, as it exits, for the kernel to tear it down (milliseconds: more
// than a rule's whole round trip). The watch is armed only for an answer
// that takes longer, such as a human's (docs/decisions/0021-child-start-up.md).
//
// # Only its own answer
//
// A response must be bound to the request bytes the child wrote
// (wire.CheckBinding); an unbound one is accepted from a pi parent, and
// refused once the parent's heartbeat announced bound answers. A refused
// file (a plant, another request's answer, garbage) is not the end while
// the request is still on disk: the child waits for the broker's answer to
// be written over it. Once the request is gone (the broker answered) a
// refusal is final: unavailable, never an approval.
//
// # The broker as its own user
//
// In the isolation mode (mailbox.Isolation: the Client's Layout has one)
// an answer is a file the broker's user owns, and nothing else: one of
// any other uid, the asker's own included, is a refused file as above.
// The child removes its request but leaves its answer, which only the
// broker's user may remove; it cannot create an inbox either, so a
// missing one is a parent that is not serving, at once. Its grants
// ("this subagent only") are those the broker vouched for its uid, read
// only (OpenLocalGrants); it records none.
package forward
