package wire

import (
	"bytes"
	"encoding/json"
	"strconv"
	"unicode/utf8"

	"github.com/seed6639df8c/courier/internal/strictjson"
)

// appendRequestWire appends w as encodeCompact writes it, byte for byte,
// without encoding/json's reflection (EncodeRequest says why). It reports
// false, with nothing to use, for what it leaves to encoding/json: a
// payload that is not valid JSON (whose error encoding/json words) and a
// sessionApproval of a type it does not know.
// TestAppendRequestWireMatchesEncodingJSON and FuzzAppendRequestWire hold
// it to encodeCompact.
func appendRequestWire(dst []byte, w *requestWire) ([]byte, bool) {
	dst = append(dst, `{"id":`...)
	dst = appendJSONString(dst, w.ID)
	dst = append(dst, `,"createdAt":`...)
	dst = strconv.AppendInt(dst, w.CreatedAt, 10)
	dst = append(dst, `,"requesterSessionId":`...)
	dst = appendJSONString(dst, w.RequesterSessionID)
	dst = append(dst, `,"targetSessionId":`...)
	dst = appendJSONString(dst, w.TargetSessionID)
	dst = append(dst, `,"requesterAgentName":`...)
	dst = appendJSONString(dst, w.RequesterAgentName)
	dst = appendOptionalString(dst, `,"message":`, w.Message)
	if len(w.Payload) > 0 {
		dst = append(dst, `,"payload":`...)
		// encoding/json compacts a RawMessage the same way, HTML escaping
		// off, and fails on the same invalid bytes.
		var err error
		if dst, err = appendCompactJSON(dst, w.Payload); err != nil {
			return nil, false
		}
	}
	dst = appendOptionalString(dst, `,"source":`, string(w.Source))
	dst = appendOptionalString(dst, `,"surface":`, w.Surface)
	dst = appendOptionalString(dst, `,"value":`, w.Value)
	switch sa := w.SessionApproval.(type) {
	case nil:
	case grantsWire:
		dst = append(dst, `,"sessionApproval":{"grants":`...)
		if sa.Grants == nil {
			dst = append(dst, "null"...)
		} else {
			dst = append(dst, '[')
			for i, g := range sa.Grants {
				if i > 0 {
					dst = append(dst, ',')
				}
				dst = append(dst, `{"surface":`...)
				dst = appendJSONString(dst, g.Surface)
				dst = append(dst, `,"pattern":`...)
				dst = appendJSONString(dst, g.Pattern)
				dst = append(dst, '}')
			}
			dst = append(dst, ']')
		}
		dst = append(dst, '}')
	case legacyApprovalWire:
		dst = append(dst, `,"sessionApproval":{"surface":`...)
		dst = appendJSONString(dst, sa.Surface)
		dst = append(dst, `,"patterns":`...)
		dst = appendJSONStrings(dst, sa.Patterns)
		dst = append(dst, '}')
	default:
		return nil, false
	}
	if ai := w.AccessIntent; ai != nil {
		dst = append(dst, `,"accessIntent":{"surface":`...)
		dst = appendJSONString(dst, ai.Surface)
		dst = append(dst, `,"matchValues":`...)
		dst = appendJSONStrings(dst, ai.MatchValues)
		dst = append(dst, `,"boundaryValue":`...)
		if ai.BoundaryValue == nil {
			dst = append(dst, "null"...)
		} else {
			dst = appendJSONString(dst, *ai.BoundaryValue)
		}
		dst = append(dst, `,"requesterCwd":`...)
		dst = appendJSONString(dst, ai.RequesterCwd)
		dst = append(dst, `,"principal":{"sessionId":`...)
		dst = appendJSONString(dst, ai.Principal.SessionID)
		dst = append(dst, `,"agentName":`...)
		dst = appendJSONString(dst, ai.Principal.AgentName)
		dst = append(dst, '}')
		dst = appendOptionalString(dst, `,"floor":`, ai.Floor)
		if len(ai.AskingUnits) > 0 {
			dst = append(dst, `,"askingUnits":[`...)
			for i, u := range ai.AskingUnits {
				if i > 0 {
					dst = append(dst, ',')
				}
				dst = append(dst, `{"command":`...)
				dst = appendJSONString(dst, u.Command)
				dst = appendOptionalString(dst, `,"floor":`, u.Floor)
				dst = append(dst, '}')
			}
			dst = append(dst, ']')
		}
		dst = append(dst, '}')
	}
	if w.RequesterPID != 0 {
		dst = append(dst, `,"requesterPid":`...)
		dst = strconv.AppendInt(dst, int64(w.RequesterPID), 10)
	}
	return append(dst, '}'), true
}

// appendOptionalString appends an omitempty string member: name (with its
// leading comma and colon) and s, or nothing when s is empty.
func appendOptionalString(dst []byte, name, s string) []byte {
	if s == "" {
		return dst
	}
	return appendJSONString(append(dst, name...), s)
}

// appendJSONStrings appends a []string as encoding/json does: null when nil.
func appendJSONStrings(dst []byte, ss []string) []byte {
	if ss == nil {
		return append(dst, "null"...)
	}
	dst = append(dst, '[')
	for i, s := range ss {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendJSONString(dst, s)
	}
	return append(dst, ']')
}

// appendCompactJSON is json.Compact appending to dst; encoding/json's own
// writing of a RawMessage with HTML escaping off is the same compaction.
func appendCompactJSON(dst, src []byte) ([]byte, error) {
	buf := bytes.NewBuffer(dst)
	if err := json.Compact(buf, src); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// appendJSONString appends s quoted as encoding/json quotes a string with
// HTML escaping off: ", \ and control bytes escaped (\b \f \n \r \t short),
// invalid UTF-8 as \ufffd, U+2028 and U+2029 escaped, all else as it is.
func appendJSONString(dst []byte, s string) []byte {
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
