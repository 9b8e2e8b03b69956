package wire

import (
	"bytes"
	"encoding/json"
	"testing"
)

// requestWireFixtures covers every member and shape of requestWire, and
// the string bytes encoding/json escapes.
func requestWireFixtures() map[string]requestWire {
	boundary := "/home/u/</script>&\u2028"
	return map[string]requestWire{
		"required only": {ID: "r1", CreatedAt: 1, RequesterSessionID: "c", TargetSessionID: "p", RequesterAgentName: "a"},
		"everything": {
			ID: "perm-1", CreatedAt: 1796157160193, RequesterSessionID: "child", TargetSessionID: "parent", RequesterAgentName: "bench",
			Message: "Agent 'bench' requested bash command 'git status --short'. Allow this command?",
			Payload: json.RawMessage(" {\"a\" : [1, 2.50e3, true, null],\n\t\"<b>\": \"x&y\\u2028\"} "),
			Source:  SourceToolCall, Surface: "bash", Value: "git status --short",
			SessionApproval: grantsWire{Grants: []grantWire{{Surface: "bash", Pattern: "git status *"}, {Surface: "read", Pattern: "/tmp/**"}}},
			AccessIntent: &intentWire{
				Surface: "bash", MatchValues: []string{"git status --short", ""}, BoundaryValue: &boundary, RequesterCwd: "/w",
				Principal: principalWire{SessionID: "child", AgentName: "bench"}, Floor: "<opaque-bash-wrapper>",
				AskingUnits: []unitWire{{Command: "git status --short"}, {Command: "eval x", Floor: "<opaque>"}},
			},
			RequesterPID: 16914,
		},
		"legacy approval": {
			ID: "r2", CreatedAt: -5, RequesterSessionID: "c", TargetSessionID: "p", RequesterAgentName: "a",
			SessionApproval: legacyApprovalWire{Surface: "bash", Patterns: []string{"ls *", "cat *"}},
		},
		"nil lists": {
			ID: "r3", RequesterSessionID: "c", TargetSessionID: "p", RequesterAgentName: "a",
			SessionApproval: grantsWire{},
			AccessIntent:    &intentWire{Surface: "bash"},
			RequesterPID:    -1,
		},
		"nil legacy patterns": {
			ID: "r4", RequesterSessionID: "c", TargetSessionID: "p", RequesterAgentName: "a",
			SessionApproval: legacyApprovalWire{Surface: "bash"},
		},
		"escapes": {
			ID: "r5", RequesterSessionID: "q\"uote\\back", TargetSessionID: "\x00\x01\x1f\x7f\b\f\n\r\t", RequesterAgentName: "<>&",
			Message: "bad \xff\xfe utf-8 \xe2\x80 cut, \u2028 \u2029 \U0001F600 é", Value: "tab\there, a long run of plain text past eight bytes\n",
		},
	}
}

func TestAppendRequestWireMatchesEncodingJSON(t *testing.T) {
	for name, w := range requestWireFixtures() {
		t.Run(name, func(t *testing.T) {
			want, wantErr := encodeCompact(w)
			got, ok := appendRequestWire(nil, &w)
			if wantErr != nil || !ok {
				t.Fatalf("encodeCompact error %v, appendRequestWire ok %t", wantErr, ok)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("appendRequestWire:\n got %s\nwant %s", got, want)
			}
		})
	}
}

// TestEncodeRequestInvalidPayload: a payload that is not JSON takes
// encoding/json's path and fails with its error, as before.
func TestEncodeRequestInvalidPayload(t *testing.T) {
	for _, payload := range []string{"{", `{"a":}`, "[1,]", "nul", `{"a":1} x`} {
		r := Request{ID: "r1", CreatedAt: 1, RequesterSessionID: "c", TargetSessionID: "p", RequesterAgentName: "a", Payload: json.RawMessage(payload)}
		w, err := requestWireOf(r)
		if err != nil {
			t.Fatalf("requestWireOf(%q): %v", payload, err)
		}
		_, wantErr := encodeCompact(w)
		_, err = EncodeRequest(r)
		if err == nil || wantErr == nil || err.Error() != wantErr.Error() {
			t.Errorf("EncodeRequest(payload %q) error %v, want %v", payload, err, wantErr)
		}
		if _, ok := appendRequestWire(nil, &w); ok {
			t.Errorf("appendRequestWire(payload %q) took an invalid payload", payload)
		}
	}
}

// FuzzAppendRequestWire holds the hand-written encoder to encoding/json
// for arbitrary strings, payload bytes and shapes.
func FuzzAppendRequestWire(f *testing.F) {
	f.Add("perm-1", int64(17), "c", "p\n\u2028", "<a>&", "msg \xff", []byte(` {"x": [1, "y"]} `), "bash", "git status", "ls *", "/b", uint8(0xff), -3)
	f.Add("", int64(0), "", "", "", "", []byte(nil), "", "", "", "", uint8(0), 0)
	f.Fuzz(func(t *testing.T, id string, createdAt int64, requester, target, agent, message string, payload []byte, surface, value, pattern, boundary string, shape uint8, pid int) {
		w := requestWire{
			ID: id, CreatedAt: createdAt, RequesterSessionID: requester, TargetSessionID: target, RequesterAgentName: agent,
			Message: message, Payload: payload, Source: RequestSource(value), Surface: surface, Value: value, RequesterPID: pid,
		}
		switch shape % 4 {
		case 1:
			w.SessionApproval = grantsWire{Grants: []grantWire{{Surface: surface, Pattern: pattern}, {Surface: message, Pattern: id}}}
		case 2:
			w.SessionApproval = legacyApprovalWire{Surface: surface, Patterns: []string{pattern, value}}
		case 3:
			w.SessionApproval = grantsWire{}
		}
		if shape&4 != 0 {
			iw := &intentWire{
				Surface: surface, MatchValues: []string{value, pattern}, RequesterCwd: boundary,
				Principal: principalWire{SessionID: requester, AgentName: agent},
			}
			if shape&8 != 0 {
				iw.BoundaryValue = &boundary
				iw.Floor = pattern
			}
			if shape&16 != 0 {
				iw.AskingUnits = []unitWire{{Command: value}, {Command: message, Floor: pattern}}
			}
			if shape&32 != 0 {
				iw.MatchValues = nil
			}
			w.AccessIntent = iw
		}
		want, wantErr := encodeCompact(w)
		got, ok := appendRequestWire(nil, &w)
		if (wantErr == nil) != ok {
			t.Fatalf("encodeCompact error %v, appendRequestWire ok %t", wantErr, ok)
		}
		if ok && !bytes.Equal(got, want) {
			t.Fatalf("appendRequestWire:\n got %q\nwant %q", got, want)
		}
	})
}
