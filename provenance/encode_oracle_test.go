package provenance

import (
	"bytes"
	"encoding/json"
	"testing"
)

// The wire shapes as encoding/json wrote them before AppendJSON: the
// oracle that AppendJSON and every MarshalJSON must match byte for byte.
type (
	userWire struct {
		Kind Kind `json:"kind"`
		Via  Via  `json:"via"`
	}
	authorizerWire struct {
		Kind    Kind              `json:"kind"`
		Name    string            `json:"name"`
		Verdict AuthorizerVerdict `json:"verdict"`
		Reason  *string           `json:"reason"`
	}
	ruleWire struct {
		Kind    Kind    `json:"kind"`
		Surface string  `json:"surface"`
		Pattern *string `json:"pattern"`
		Origin  *string `json:"origin"`
	}
	sessionApprovalWire struct {
		Kind    Kind    `json:"kind"`
		Surface string  `json:"surface"`
		Pattern *string `json:"pattern"`
	}
	yoloWire struct {
		Kind    Kind    `json:"kind"`
		Pattern *string `json:"pattern"`
	}
	kindOnlyWire struct {
		Kind Kind `json:"kind"`
	}
	reasonWire struct {
		Kind   Kind   `json:"kind"`
		Reason string `json:"reason"`
	}
)

// marshal is encoding/json with HTML escaping off, as pi's JSON.stringify.
func marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false) // JSON.stringify leaves <, > and & alone
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// viaReflection writes s as encoding/json wrote every kind before
// AppendJSON: each kind's wire struct, by reflection.
func viaReflection(t testing.TB, s Source) []byte {
	t.Helper()
	var v any
	switch s := s.(type) {
	case nil:
		return []byte("null")
	case User:
		v = userWire{KindUser, s.Via}
	case Authorizer:
		v = authorizerWire{KindAuthorizer, s.Name, s.Verdict, s.Reason}
	case Rule:
		v = ruleWire{KindRule, s.Surface, s.Pattern, s.Origin}
	case SessionApproval:
		v = sessionApprovalWire{KindSessionApproval, s.Surface, s.Pattern}
	case Yolo:
		v = yoloWire{KindYolo, s.Pattern}
	case InfrastructureRead:
		v = kindOnlyWire{KindInfrastructureRead}
	case Unavailable:
		v = reasonWire{KindUnavailable, s.Reason}
	case GateError:
		v = reasonWire{KindGateError, s.Reason}
	case Forwarded:
		inner := viaReflection(t, s.Decision)
		v = struct {
			Kind               Kind            `json:"kind"`
			ResponderSessionID *string         `json:"responderSessionId"`
			Decision           json.RawMessage `json:"decision"`
		}{KindForwarded, s.ResponderSessionID, inner}
	default:
		t.Fatalf("unknown kind %T", s)
	}
	b, err := marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
