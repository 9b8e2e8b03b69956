package provenance

import (
	"encoding/json"
	"unicode/utf8"

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
		dst = AppendJSONString(append(dst, `,"via":`...), string(s.Via))
	case Authorizer:
		dst = appendKind(dst, KindAuthorizer)
		dst = AppendJSONString(append(dst, `,"name":`...), s.Name)
		dst = AppendJSONString(append(dst, `,"verdict":`...), string(s.Verdict))
		dst = appendNullable(append(dst, `,"reason":`...), s.Reason)
	case Rule:
		dst = appendKind(dst, KindRule)
		dst = AppendJSONString(append(dst, `,"surface":`...), s.Surface)
		dst = appendNullable(append(dst, `,"pattern":`...), s.Pattern)
		dst = appendNullable(append(dst, `,"origin":`...), s.Origin)
	case SessionApproval:
		dst = appendKind(dst, KindSessionApproval)
		dst = AppendJSONString(append(dst, `,"surface":`...), s.Surface)
		dst = appendNullable(append(dst, `,"pattern":`...), s.Pattern)
	case Yolo:
		dst = appendKind(dst, KindYolo)
		dst = appendNullable(append(dst, `,"pattern":`...), s.Pattern)
	case InfrastructureRead:
		dst = appendKind(dst, KindInfrastructureRead)
	case Unavailable:
		dst = appendKind(dst, KindUnavailable)
		dst = AppendJSONString(append(dst, `,"reason":`...), s.Reason)
	case GateError:
		dst = appendKind(dst, KindGateError)
		dst = AppendJSONString(append(dst, `,"reason":`...), s.Reason)
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
	return AppendJSONString(append(dst, `{"kind":`...), string(k))
}

// appendNullable appends a *string member's value: null when nil.
func appendNullable(dst []byte, s *string) []byte {
	if s == nil {
		return append(dst, "null"...)
	}
	return AppendJSONString(dst, *s)
}

// AppendJSONString appends s quoted as encoding/json quotes a string with
// HTML escaping off (as JSON.stringify does): ", \ and control bytes
// escaped (\b \f \n \r \t short), invalid UTF-8 as \ufffd, U+2028 and
// U+2029 escaped, all else as it is. It is AppendJSON's quoting, for a
// caller that writes a decidedBy inside an object of its own by hand
// (cmd/child's decision) and must quote its other members the same way.
func AppendJSONString(dst []byte, s string) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		// The bytes written as they are, found eight at a time.
		if i = strictjson.TextRun(s, i); i == len(s) {
			break
		}
		if b := s[i]; b < utf8.RuneSelf {
			dst = append(dst, s[start:i]...)
			switch b {
			case '\\', '"':
				dst = append(dst, '\\', b)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hex[b>>4], hex[b&0xF])
			}
			i++
			start = i
			continue
		}
		c, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case c == utf8.RuneError && size == 1:
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
		case c == '\u2028' || c == '\u2029':
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hex[c&0xF])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}
