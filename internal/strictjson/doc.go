// Package strictjson is courier's one home for reading JSON text by hand:
// it refuses documents that Go's encoding/json would read ambiguously or
// expensively, and it walks the documents it accepted without decoding
// them.
//
// # Checking
//
// encoding/json matches object keys case-insensitively and lets the last
// duplicate win, so `{"state":"denied","STATE":"approved"}` decodes as
// approved. A JavaScript reader (pi's) sees the first key exactly. Every
// document courier reads from the mailbox or a review log passes [Check]
// first, so both readers agree on what a file says, or the file is refused
// (docs/decisions/0001-strict-tolerant-wire-readers.md). Check is one pass
// that allocates nothing on a valid document of ordinary size. [Valid] is
// the same pass without the comparison of keys, for a reader that judges
// repeated keys itself.
//
// # Walking
//
// [Root] returns the value of a well-formed document, and a [Value] walks
// on: [Value.Members] yields an object's members (each key, its value, and
// where each starts in the document), [Value.Items] an array's items,
// [Value.Kind] says what a value is, and [Value.Text] and [Unquote] decode
// a string exactly as encoding/json would. A walk allocates nothing and
// hands out slices of the document, so a reader pays only for what it
// keeps.
//
// The readers built on it: wire splits each mailbox file into its fields
// (wire/fields.go), rules reads the operator's config with a line and
// column for every problem (rules/parse.go), and reviewlog transcodes what
// a MarshalJSON method returned into a log line (reviewlog/render_text.go).
// A walk trusts that its bytes are well formed: on bytes that are not, it
// stops with an error, but it does not find every fault.
//
// # Rules this package keeps
//
//   - Check's errors wrap [ErrInvalid] and carry the wording of
//     encoding/json's Decoder.Token for the same input; logs and golden
//     files quote it, and FuzzCheckAgreesWithOracle holds it to that.
//   - Keys, strings and numbers read as encoding/json reads them: a walk
//     agrees with json.Unmarshal on every document Check accepts
//     (FuzzWalkAgreesWithUnmarshal).
//   - Nothing here recurses on the input's nesting.
package strictjson
