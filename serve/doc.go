// Package serve is the broker's serve loop: it drains one serving
// session's inbox and answers every request, each independently.
//
// # The data path
//
// A request file is read safely and decoded (untrusted input: a bad file
// is logged and removed, it never stops the loop), checked against this
// session, then resolved in this order: recorded authority (rules and
// session grants, only with an accessIntent), the authorizer chain, the
// terminal. The decision's grant scope is applied (a whole-session grant
// is recorded and journaled, then written as plain approved), the
// response is written atomically (a link or a rename), and only then is the
// request removed.
//
// # Concurrency
//
// A few workers read requests in arrival order and decide what the rules
// decide; what costs after that (writing the response, removing the
// request, the review entries, escalating an ask) waits in a queue per
// requesting session and is done in turn across them, so that a flood
// from one subagent never starves another. Reading comes first while files
// are waiting, and under a flood the flood's jobs wait while the inbox
// watcher still has names to hand out (0031). An ask for the chain or the
// terminal leaves its worker for a goroutine of its own, so a human
// deliberating or a slow plugin never
// delays a rule-resolved answer to another child; the asks waiting there
// are bounded per requesting session and in all, and one past a bound is
// answered "unavailable" at once, saying which. A terminal that is a
// Holder (the operator's prompt) keeps the asks it is given in its own
// queue: the goroutine ends once the ask is handed over, and the broker
// keeps only what answering needs, not the request's message or payload,
// so thousands of asks waiting for a human cost no goroutine and no
// payload each; nor does an ask waiting for its turn to escalate, whose
// turn reads its file again (the same bytes, or it is not escalated). A request older than the forwarding timeout is answered
// that nobody answered in time, held or not. A request is never handled
// twice at once (the watcher hands a name to one consumer), never answered
// twice (this broker's own answer on disk, bound to the same request
// bytes, or an in-memory answer short-circuits; a terminal's second answer
// is ignored; a different request reusing an answered id is refused at
// once), and a decision whose response could not be written is kept and
// rewritten on the next attempt rather than resolved again.
//
// docs/decisions/0005-serve-loop.md, 0008-held-asks.md and
// 0014-fair-share-and-bounds.md say why the loop is shaped so.
//
// # Bound answers
//
// Every response names the request id and the SHA-256 of the request bytes
// it decides (wire.Response.Bind), and the heartbeat announces it. A
// file at the response path that is not this broker's bound answer (planted,
// or copied from another request) neither counts as an answer nor stops
// one: it is logged and written over.
//
// # Lifetime
//
// Run publishes the heartbeat every second and withdraws it on return; one
// timer drives the heartbeat and the sweep of requests in flight. When its
// context ends, every request still pending (in flight, held by the
// terminal, or on disk) is answered "unavailable: the session ended"
// before Run returns, with the heartbeat kept fresh meanwhile. A child
// that gives up (its request disappears, or its process dies) cancels the
// work on its request and withdraws its ask from the terminal; nobody is
// prompted for a dead child. The sweep that notices costs one listing of
// the inbox and one liveness check per requesting process, however many
// asks are in flight.
package serve
