package provenance

import (
	"encoding/json"

	"github.com/seed6639df8c/courier/internal/strictjson"
)

// Decode reads a `decidedBy` value. It reports false ("absent") unless raw
// is one well-formed Source: a known kind, every required member present
// with the right type, nullable members a string or null (a missing
// nullable member reads as null), and at most MaxDepth Forwarded frames,
// each of whose decisions is itself well-formed or null. Unknown members
// are ignored. A user's via must be one of seed 000's literals, as pi
// reads it; the one exception is "terminal", which courier before issue
// 15 wrote for its tty prompt: it reads as ViaDialog (accepted on read for
// compatibility, never written). Decode never panics and its recursion is
// bounded.
func Decode(raw []byte) (Source, bool) {
	if strictjson.Check(raw) != nil {
		return nil, false
	}
	return decodeAt(raw, 0)
}

type members map[string]json.RawMessage

func decodeAt(raw json.RawMessage, depth int) (Source, bool) {
	var m members
	if firstByte(raw) != '{' || json.Unmarshal(raw, &m) != nil {
		return nil, false
	}
	kind, ok := m.str("kind")
	if !ok {
		return nil, false
	}
	switch Kind(kind) {
	case KindUser:
		via, ok := m.str("via")
		switch {
		case !ok:
			return nil, false
		case via == legacyViaTerminal:
			// An older courier's tty prompt: read as what it was, a
			// dialog, so relaying or rewriting it puts only the
			// seed's literal on the wire.
			return User{Via: ViaDialog}, true
		case !Via(via).Valid():
			// As pi reads it: a via outside the union is no decider.
			// Kept, it would be relayed up to readers that drop it.
			return nil, false
		}
		return User{Via: Via(via)}, true
	case KindAuthorizer:
		name, ok1 := m.str("name")
		verdict, ok2 := m.str("verdict")
		reason, ok3 := m.nullableStr("reason")
		if !ok1 || !ok2 || !ok3 || (AuthorizerVerdict(verdict) != VerdictAllow && AuthorizerVerdict(verdict) != VerdictDeny) {
			return nil, false
		}
		return Authorizer{Name: name, Verdict: AuthorizerVerdict(verdict), Reason: reason}, true
	case KindRule:
		surface, ok1 := m.str("surface")
		pattern, ok2 := m.nullableStr("pattern")
		origin, ok3 := m.nullableStr("origin")
		if !ok1 || !ok2 || !ok3 {
			return nil, false
		}
		return Rule{Surface: surface, Pattern: pattern, Origin: origin}, true
	case KindSessionApproval:
		surface, ok1 := m.str("surface")
		pattern, ok2 := m.nullableStr("pattern")
		if !ok1 || !ok2 {
			return nil, false
		}
		return SessionApproval{Surface: surface, Pattern: pattern}, true
	case KindYolo:
		pattern, ok := m.nullableStr("pattern")
		if !ok {
			return nil, false
		}
		return Yolo{Pattern: pattern}, true
	case KindInfrastructureRead:
		return InfrastructureRead{}, true
	case KindUnavailable:
		reason, ok := m.str("reason")
		if !ok {
			return nil, false
		}
		return Unavailable{Reason: reason}, true
	case KindGateError:
		reason, ok := m.str("reason")
		if !ok {
			return nil, false
		}
		return GateError{Reason: reason}, true
	case KindForwarded:
		if depth >= MaxDepth {
			return nil, false
		}
		responder, ok := m.nullableStr("responderSessionId")
		if !ok {
			return nil, false
		}
		f := Forwarded{ResponderSessionID: responder}
		if raw, present := m["decision"]; present && firstByte(raw) != 'n' {
			inner, ok := decodeAt(raw, depth+1)
			if !ok {
				return nil, false
			}
			f.Decision = inner
		}
		return f, true
	}
	return nil, false
}

// str reads a member that must be present and a JSON string.
func (m members) str(name string) (string, bool) {
	raw, ok := m[name]
	if !ok || firstByte(raw) != '"' {
		return "", false
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return "", false
	}
	return s, true
}

// nullableStr reads a member that is a string, null, or missing (null).
func (m members) nullableStr(name string) (*string, bool) {
	raw, ok := m[name]
	if !ok || firstByte(raw) == 'n' {
		return nil, true
	}
	s, ok := m.str(name)
	if !ok {
		return nil, false
	}
	return &s, true
}

func firstByte(raw json.RawMessage) byte {
	for _, c := range raw {
		switch c {
		case ' ', '\t', '\n', '\r':
			continue
		}
		return c
	}
	return 0
}
