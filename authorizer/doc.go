// Package authorizer is what an authorizer codes against: the evidence of
// one permission ask it may see ([Evidence]) and the answer it may give
// ([Verdict]): allow, deny with a reason, or defer.
//
// The broker consults authorizers on every ask that the recorded rules
// left undecided, before the ask reaches the terminal (a human, a relay,
// or a headless denial). Each authorizer is a link of the operator's
// authorizerChain; the runner that consults them in config order is
// package chain, and a Go plugin serves an authorizer with package
// plugins/sdk. This package imports only the standard library, package
// wire and package provenance, so a plugin binary links nothing of the
// broker (plugins/sdk/deps_test.go keeps it so). The words link,
// disclosure, envelope, floor and grant are those of docs/GLOSSARY.md; the
// design is docs/decisions/0003-authorizer-plugins.md.
//
// # What an authorizer sees
//
// An authorizer never sees a [wire.Request]. [Project] builds its
// [Evidence] field by field: the request id, the display surface and
// value, the source, the prompt message and payload, the forwarding
// provenance (the requesting agent and session), the child-fixed access
// facts ([AccessFacts]), the suggested session grants
// ([SuggestedGrant]) and, on a bash ask, the complete input and the units
// that asked as two facts ([BashInput], from structured fields only,
// never the message). The requester's working directory and principal,
// and the serving session's conversation ([Conversation]), are withheld
// unless the operator disclosed them to that link ([Disclosure]).
// Because the projection copies named fields rather than whole structs, a
// field added to the wire types reaches no authorizer until someone
// decides it should; evidence_test.go fails until the new field is
// classified.
//
// Evidence names the child's facts after the wire types they come from,
// but they are this package's own types: [AskingUnit] and [Principal] are
// wire.AskingUnit and wire.Principal as an authorizer sees them, and a
// [SuggestedGrant] is a suggestion, never a grant the broker records
// (those are rules.SessionGrant).
//
// # What an authorizer can decide
//
// An authorizer must:
//
//   - Treat the evidence as read-only.
//   - Decide on the child-fixed facts ([Evidence.Access]) where they are
//     present: the display fields are for display. Judge the surface the
//     broker judges, [EnvelopeSurface].
//   - Defer when it has no opinion: the next link, then the terminal,
//     decides. Only an allow or a deny decides the ask.
//   - Explain a deny in its [Verdict.Reason]: the child agent reads it, so
//     it should say what was refused and what to do instead. The broker
//     cleans it ([CleanReason]) and cuts it to [MaxReasonRunes]. A defer
//     may say why too, with a stable [Verdict.Code]; both reach the
//     review log only, with the link's [Meta], cleaned and bounded
//     ([CleanCode], [CleanMeta]).
//   - Not allow a bash ask on [Evidence.Value] alone when [Evidence.Bash]
//     is nil: the display value may be only the unit that asked.
//   - Return an error, not a guess, when it cannot judge, and return by
//     the deadline of its context. Any kind other than the three
//     [VerdictKind] values is an invalid answer ([ErrInvalidVerdict]).
//
// The broker's chain, not the authorizer, enforces the limits:
//
//   - The delegation envelope ([Envelope]) caps an allow to defer when the
//     surface family is path or external_directory, or cannot be
//     determined ([Delegable]). It only ever tightens.
//   - An authorizer that fails (an error, an invalid answer, a timeout, a
//     crashed or disabled plugin) yields its link's failure verdict, deny
//     or defer, never allow.
//   - A link in shadow mode is consulted and its verdict logged, never
//     enforced.
//   - An allow approves once: never for the session.
package authorizer
