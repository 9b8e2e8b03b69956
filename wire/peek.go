package wire

import (
	"bytes"

	"github.com/seed6639df8c/courier/internal/strictjson"
)

// PeekRequester returns the requesterSessionId of the request file data,
// reading nothing else and checking nothing: a hint of whose turn the
// request's work takes, for a broker that must sort a flood's files from
// another requester's before it can afford to decode them all
// (docs/decisions/0020-flood-intake.md). ok is false when there is no
// such top-level string member, or when the bytes stop the walk first.
//
// It decides nothing, so it is not a reader in the sense of
// docs/decisions/0001-strict-tolerant-wire-readers.md: the request is
// still decoded by DecodeRequest, which checks it strictly, before
// anything is decided on it. Where DecodeRequest accepts data, the two
// agree (FuzzPeekRequester): both read the first member named exactly
// requesterSessionId, and a document with a second one (or a case
// variant) is refused by the strict check.
//
// It never reads out of bounds or loops on hostile bytes (the walker of
// internal/strictjson stops with an error), and it allocates only the
// string it returns.
func PeekRequester(data []byte) (session string, ok bool) {
	m := strictjson.Root(data).Members()
	for m.Next() {
		if !bytes.Equal(m.Key().Text(), requesterSessionKey) {
			continue
		}
		v := m.Value()
		if v.Kind() != strictjson.KindString {
			return "", false
		}
		return string(v.Text()), true
	}
	return "", false
}

var requesterSessionKey = []byte("requesterSessionId")
