// Package chain is the authorizer chain of one broker node: the links the
// operator configured, consulted in config order on every ask that the
// recorded rules left undecided, before the ask reaches the terminal (a
// human, a relay, or a headless denial).
//
// A [Link] answers an ask with a [Verdict]: allow, deny (with a reason) or
// defer. The first link that allows or denies decides; a link that defers
// passes the ask on and is never credited. When every link defers,
// [Chain.Resolve] reports false and the terminal decides.
//
// # What a link sees
//
// A link never sees a [wire.Request]. [Project] builds its [Evidence]
// field by field: the request id, the display surface and value, the
// source, the prompt message and payload, the forwarding provenance (the
// requesting agent and session), the child-fixed access facts and the
// suggested session grants. The requester's working directory and
// principal are withheld unless the operator disclosed them to that link
// ([Disclosure]). Because the projection copies named fields rather than
// whole structs, a field added to the wire types reaches no link until
// someone decides it should; a test fails until the new field is
// classified.
//
// # What a link can decide
//
// The chain, not the link, enforces the limits:
//
//   - The delegation envelope ([Envelope]) caps an allow to defer when the
//     surface family is path or external_directory, or cannot be
//     determined. It only ever tightens.
//   - A link that fails (an error, a timeout, a crashed or disabled
//     plugin) yields its failure verdict, deny or defer, never allow.
//   - A link in [Shadow] mode is consulted and its verdict logged
//     (authorizer_link.shadow), never enforced. Shadow links run beside the
//     enforcing ones and never delay a decision.
//   - An allow approves once: never for the session.
//
// # Review log
//
// Before any link runs, Resolve writes authorizer_chain_resolved
// {requestId, links}; then one authorizer_link.verdict entry per
// consulted link, with its latency; the decision it returns names the
// deciding link in decidedBy {kind: "authorizer", name, verdict, reason}.
// The serve loop writes the terminal entry.
//
// Links that run as plugin processes are built by package plugins, which
// loads the operator's configuration into a Chain.
package chain
