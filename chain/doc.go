// Package chain is the authorizer chain of one broker node: the links the
// operator configured, consulted in config order on every ask that the
// recorded rules left undecided, before the ask reaches the terminal (a
// human, a relay, or a headless denial).
//
// A [Link] answers an ask with an [authorizer.Verdict]: allow, deny (with a
// reason) or defer. The first link that allows or denies decides; a link
// that defers passes the ask on and is never credited. When every link
// defers, [Chain.Resolve] reports false and the terminal decides.
//
// What a link sees and what it may answer is the contract of package
// authorizer; this package runs the links and keeps the limits that
// contract states, whatever a link answers.
//
// # What the chain enforces
//
//   - Each link gets its own projection of the request:
//     [authorizer.ProjectWithConversation] with that member's
//     [authorizer.Disclosure]. The serving session's conversation
//     ([WithConversation]) is read once per ask, and only when a link the
//     ask reaches discloses it.
//   - Every verdict passes through the delegation envelope
//     ([authorizer.Envelope]), which caps an allow to defer on path and
//     external_directory asks; every deny or defer reason is cleaned
//     ([authorizer.CleanReason]), and a link's code and metadata too
//     ([authorizer.CleanCode], [authorizer.CleanMeta]). Only a deny's
//     reason reaches the child.
//   - A link that fails (an error, an invalid verdict, a timeout, a
//     crashed or disabled plugin) yields its member's failure verdict,
//     deny or defer, never allow. A failure that denies is decided by
//     {kind: gate_error}, because no link said no.
//   - A link in [Shadow] mode is consulted and its verdict logged
//     (authorizer_link.shadow), never enforced. Shadow links run beside the
//     enforcing ones and never delay a decision.
//   - An allow approves once: never for the session.
//
// # Review log
//
// Before any link runs, Resolve writes authorizer_chain_resolved
// {requestId, links}; then one authorizer_link.verdict entry per
// consulted link, with its latency and the link's code, reason and
// metadata (never its evidence, never the conversation); the decision it
// returns names the
// deciding link in decidedBy {kind: "authorizer", name, verdict, reason}.
// The serve loop writes the terminal entry.
//
// Links that run as plugin processes are built by package plugins, which
// loads the operator's configuration into a Chain.
package chain
