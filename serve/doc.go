// Package serve is the broker's serve loop: it drains one serving
// session's inbox and answers every request, each independently.
//
// # The data path
//
// A request file is read safely and decoded (untrusted input: a bad file
// is logged and removed, it never stops the loop), checked against this
// session, then resolved in SPEC order: recorded authority (rules and
// session grants, only with an accessIntent), the authorizer chain, the
// terminal. The decision's grant scope is applied (a whole-session grant
// is recorded and journaled, then written as plain approved), the
// response is written durably, and only then is the request removed.
//
// # Concurrency
//
// Every request runs on its own goroutine, so a human deliberating or a
// slow plugin never delays a rule-resolved answer to another child. A
// request is never handled twice at once (the watcher hands a name to one
// consumer), never answered twice (this broker's own answer on disk, bound
// to the same request bytes, or an in-memory answer short-circuits), and a
// decision whose response could not be written is kept and rewritten on
// the next attempt rather than resolved again.
//
// # Bound answers
//
// Every response names the request id and the SHA-256 of the request bytes
// it decides (mailbox.Response.Bind), and the heartbeat announces it. A
// file at the response path that is not this broker's bound answer (planted,
// or copied from another request) neither counts as an answer nor stops
// one: it is logged and written over.
//
// # Lifetime
//
// Run publishes the heartbeat every second and withdraws it on return.
// When its context ends, every request still pending (in flight or on
// disk) is answered "unavailable: the session ended" before Run returns.
// A child that gives up (its request disappears, or its process dies)
// cancels the work on its request; nobody is prompted for a dead child.
package serve
