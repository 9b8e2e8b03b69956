package provenance

import (
	"encoding/json"

	"github.com/seed6639df8c/courier/internal/strictjson"
)

// AppendJSON appends s as its MarshalJSON writes it, and as encoding/json
// writes it inside a value with HTML escaping off: the same bytes, without
// encoding/json's reflection, whose first use of each type costs a
// one-ask child (`child ask`, printing its decidedBy) about 0.1 ms
// (BENCHMARKS.md, "Child processes on the critical path"). A nil s is
// null. TestAppendJSONMatchesEncodingJSON and FuzzAppendJSON hold it to
// encoding/json.
func AppendJSON(dst []byte, s Source) []byte {
	switch s := s.(type) {
	case nil:
		return append(dst, "null"...)
	case User:
		dst = appendKind(dst, KindUser)
		dst = strictjson.AppendString(append(dst, `,"via":`...), string(s.Via))
	case Authorizer:
		dst = appendKind(dst, KindAuthorizer)
		dst = strictjson.AppendString(append(dst, `,"name":`...), s.Name)
		dst = strictjson.AppendString(append(dst, `,"verdict":`...), string(s.Verdict))
		dst = appendNullable(append(dst, `,"reason":`...), s.Reason)
	case Rule:
		dst = appendKind(dst, KindRule)
		dst = strictjson.AppendString(append(dst, `,"surface":`...), s.Surface)
		dst = appendNullable(append(dst, `,"pattern":`...), s.Pattern)
		dst = appendNullable(append(dst, `,"origin":`...), s.Origin)
	case SessionApproval:
		dst = appendKind(dst, KindSessionApproval)
		dst = strictjson.AppendString(append(dst, `,"surface":`...), s.Surface)
		dst = appendNullable(append(dst, `,"pattern":`...), s.Pattern)
	case Yolo:
		dst = appendKind(dst, KindYolo)
		dst = appendNullable(append(dst, `,"pattern":`...), s.Pattern)
	case InfrastructureRead:
		dst = appendKind(dst, KindInfrastructureRead)
	case Unavailable:
		dst = appendKind(dst, KindUnavailable)
		dst = strictjson.AppendString(append(dst, `,"reason":`...), s.Reason)
	case GateError:
		dst = appendKind(dst, KindGateError)
		dst = strictjson.AppendString(append(dst, `,"reason":`...), s.Reason)
	case Forwarded:
		dst = appendKind(dst, KindForwarded)
		dst = appendNullable(append(dst, `,"responderSessionId":`...), s.ResponderSessionID)
		dst = AppendJSON(append(dst, `,"decision":`...), s.Decision)
	default:
		// A pointer to one of the kinds (the interface is sealed, and
		// its methods have value receivers): encoding/json writes a nil
		// one as null and calls MarshalJSON, which comes back here with
		// the value, for any other.
		b, err := json.Marshal(s)
		if err != nil {
			return append(dst, "null"...)
		}
		return append(dst, b...)
	}
	return append(dst, '}')
}

// appendKind opens an object with its kind member.
func appendKind(dst []byte, k Kind) []byte {
	return strictjson.AppendString(append(dst, `{"kind":`...), string(k))
}

// appendNullable appends a *string member's value: null when nil.
func appendNullable(dst []byte, s *string) []byte {
	if s == nil {
		return append(dst, "null"...)
	}
	return strictjson.AppendString(dst, *s)
}
