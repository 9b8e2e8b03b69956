// Package wire is the vocabulary of pi-permission-system's forwarding
// mailbox: the request, the response, the heartbeat, the binding of an
// answer to its request, and request ids, with the readers and writers
// of their JSON. It does no I/O; package mailbox moves these documents
// through the filesystem, and rules, chain and the plugin contract judge
// them without touching the transport.
//
// # Compatibility
//
// The format is pi's, both generations: the 20.7.3 release on npm and the
// 25.x wire. [DecodeRequest], [DecodeResponse] and [DecodeHeartbeat] read
// the way pi's readers do, by exact member name: unknown members are
// ignored, a malformed optional member is dropped on its own (and
// reported), a missing or malformed required member rejects the document
// with a [FieldError] naming it. They are stricter than pi in two places,
// both fail-closed: a document with duplicate keys in any letter case is
// refused (Go's decoder would let "STATE" override "state"), and a
// response whose `approved` flag contradicts its `state` is refused
// (docs/decisions/0001-strict-tolerant-wire-readers.md).
//
// The encoders write compact JSON in pi's member order, so a document pi
// wrote re-encodes to the same bytes (testdata/wire pins it).
//
// # Extensions
//
// courier adds optional members that pi's readers drop: a request's
// `requesterPid` (so a broker never prompts for a dead child), a
// response's `requestId` and `requestSha256` (the binding of an answer to
// the exact request bytes it decides, see [CheckBinding]), and a
// heartbeat's `responseBinding` (the serving node's promise that every
// answer is bound, which lets a child refuse unbound ones).
// docs/decisions/0006-response-binding.md explains the binding and what it
// cannot stop.
//
// Everything decoded here is untrusted input.
package wire
