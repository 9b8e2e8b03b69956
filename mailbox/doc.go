// Package mailbox is courier's filesystem transport: the on-disk layout,
// the wire types, tolerant readers, atomic writes, watching, liveness and
// sweeping of pi-permission-system's permission-forwarding mailbox.
//
// # Layout
//
//	<root>/sessions/<encodeURIComponent(serving session)>/requests/<id>.json   written by children
//	<root>/sessions/<encodeURIComponent(serving session)>/responses/<id>.json  written by the broker
//	<root>/serving/<encodeURIComponent(serving session)>.json                  the broker's heartbeat
//
// # Wire compatibility
//
// The file format is pi's, both generations: the 20.7.3 release on npm and
// the 25.x wire. [DecodeRequest], [DecodeResponse] and [DecodeHeartbeat]
// read the way pi's readers do, by exact member name: unknown members are
// ignored, a malformed optional member is dropped on its own (and
// reported), a missing or malformed required member rejects the file with
// a [FieldError] naming it. They are stricter than pi in two places, both
// fail-closed: a document with duplicate keys in any letter case is refused
// (Go's decoder would let "STATE" override "state"), and a response whose
// `approved` flag contradicts its `state` is refused.
//
// The encoders write compact JSON in pi's member order, so a file pi wrote
// re-encodes to the same bytes.
//
// # Extensions
//
// courier adds optional members that pi's readers drop: a request's
// `requesterPid` (so a broker never prompts for a dead child), a response's
// `requestId` and `requestSha256` (the binding of an answer to the exact
// request bytes it decides, see [CheckBinding]), and a heartbeat's
// `responseBinding` (the serving node's promise that every answer is bound,
// which lets a child refuse unbound ones). docs/decisions/0006 explains the
// binding and what it cannot stop.
//
// Everything read from a mailbox is untrusted input. This package knows
// nothing of rules, authorizer links or terminals.
package mailbox
