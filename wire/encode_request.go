package wire

import (
	"bytes"
	"encoding/json"
	"strconv"

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
	dst = strictjson.AppendString(dst, w.ID)
	dst = append(dst, `,"createdAt":`...)
	dst = strconv.AppendInt(dst, w.CreatedAt, 10)
	dst = append(dst, `,"requesterSessionId":`...)
	dst = strictjson.AppendString(dst, w.RequesterSessionID)
	dst = append(dst, `,"targetSessionId":`...)
	dst = strictjson.AppendString(dst, w.TargetSessionID)
	dst = append(dst, `,"requesterAgentName":`...)
	dst = strictjson.AppendString(dst, w.RequesterAgentName)
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
				dst = strictjson.AppendString(dst, g.Surface)
				dst = append(dst, `,"pattern":`...)
				dst = strictjson.AppendString(dst, g.Pattern)
				dst = append(dst, '}')
			}
			dst = append(dst, ']')
		}
		dst = append(dst, '}')
	case legacyApprovalWire:
		dst = append(dst, `,"sessionApproval":{"surface":`...)
		dst = strictjson.AppendString(dst, sa.Surface)
		dst = append(dst, `,"patterns":`...)
		dst = appendJSONStrings(dst, sa.Patterns)
		dst = append(dst, '}')
	default:
		return nil, false
	}
	if ai := w.AccessIntent; ai != nil {
		dst = append(dst, `,"accessIntent":{"surface":`...)
		dst = strictjson.AppendString(dst, ai.Surface)
		dst = append(dst, `,"matchValues":`...)
		dst = appendJSONStrings(dst, ai.MatchValues)
		dst = append(dst, `,"boundaryValue":`...)
		if ai.BoundaryValue == nil {
			dst = append(dst, "null"...)
		} else {
			dst = strictjson.AppendString(dst, *ai.BoundaryValue)
		}
		dst = append(dst, `,"requesterCwd":`...)
		dst = strictjson.AppendString(dst, ai.RequesterCwd)
		dst = append(dst, `,"principal":{"sessionId":`...)
		dst = strictjson.AppendString(dst, ai.Principal.SessionID)
		dst = append(dst, `,"agentName":`...)
		dst = strictjson.AppendString(dst, ai.Principal.AgentName)
		dst = append(dst, '}')
		dst = appendOptionalString(dst, `,"floor":`, ai.Floor)
		if len(ai.AskingUnits) > 0 {
			dst = append(dst, `,"askingUnits":[`...)
			for i, u := range ai.AskingUnits {
				if i > 0 {
					dst = append(dst, ',')
				}
				dst = append(dst, `{"command":`...)
				dst = strictjson.AppendString(dst, u.Command)
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
	return strictjson.AppendString(append(dst, name...), s)
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
		dst = strictjson.AppendString(dst, s)
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
