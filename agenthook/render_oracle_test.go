package agenthook

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// The output shapes as encoding/json wrote them before Render wrote them
// by hand: the oracle its bytes are checked against.
type (
	permissionRequestOutput struct {
		HookSpecificOutput permissionRequestSpecific `json:"hookSpecificOutput"`
	}
	permissionRequestSpecific struct {
		HookEventName string             `json:"hookEventName"`
		Decision      permissionDecision `json:"decision"`
	}
	// permissionDecision holds behavior and message only: Codex voids an
	// answer with any other field (updatedInput, updatedPermissions,
	// interrupt), and a message only on a deny.
	permissionDecision struct {
		Behavior string `json:"behavior"`
		Message  string `json:"message,omitempty"`
	}
	preToolUseOutput struct {
		HookSpecificOutput preToolUseSpecific `json:"hookSpecificOutput"`
	}
	preToolUseSpecific struct {
		HookEventName            string `json:"hookEventName"`
		PermissionDecision       string `json:"permissionDecision"`
		PermissionDecisionReason string `json:"permissionDecisionReason"`
	}
)

// oracleRender is Render as it was written with encoding/json.
func oracleRender(cli CLI, event EventName, a Answer) []byte {
	if a.Verdict == VerdictNone {
		return nil
	}
	var v any
	switch event {
	case PermissionRequest:
		d := permissionDecision{Behavior: "allow"}
		if a.Verdict == VerdictDeny {
			d = permissionDecision{Behavior: "deny", Message: a.message()}
		}
		v = permissionRequestOutput{permissionRequestSpecific{HookEventName: string(PermissionRequest), Decision: d}}
	case PreToolUse:
		if a.Verdict == VerdictAllow && cli == Codex {
			return nil
		}
		decision := "allow"
		if a.Verdict == VerdictDeny {
			decision = "deny"
		}
		v = preToolUseOutput{preToolUseSpecific{HookEventName: string(PreToolUse), PermissionDecision: decision, PermissionDecisionReason: a.message()}}
	default:
		return nil
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil
	}
	return b.Bytes()
}

// renderMessages are messages chosen to trip a hand-written quoting:
// quotes, backslashes, control bytes, HTML, U+2028, invalid UTF-8.
var renderMessages = []string{
	"", "courier: denied by rule bash \"git push --force*\"", "a\\b\n\t\r\x00\x1f\x7f",
	"<script>&amp;</script>", "line\u2028sep\u2029", "bad \xff\xfe utf-8", strings.Repeat("é", 300),
}

func TestRenderMatchesEncodingJSON(t *testing.T) {
	for _, cli := range []CLI{ClaudeCode, Codex} {
		for _, event := range []EventName{PermissionRequest, PreToolUse, "Stop"} {
			for _, v := range []Verdict{VerdictNone, VerdictAllow, VerdictDeny} {
				for _, m := range renderMessages {
					a := Answer{Verdict: v, Message: m}
					if got, want := Render(cli, event, a), oracleRender(cli, event, a); !bytes.Equal(got, want) {
						t.Errorf("Render(%v, %s, %+v) = %q, want %q", cli, event, a, got, want)
					}
				}
			}
		}
	}
}

func FuzzRenderMatchesEncodingJSON(f *testing.F) {
	for _, m := range renderMessages {
		f.Add(m, true)
	}
	f.Fuzz(func(t *testing.T, m string, deny bool) {
		a := Answer{Verdict: VerdictAllow, Message: m}
		if deny {
			a.Verdict = VerdictDeny
		}
		for _, event := range []EventName{PermissionRequest, PreToolUse} {
			if got, want := Render(ClaudeCode, event, a), oracleRender(ClaudeCode, event, a); !bytes.Equal(got, want) {
				t.Fatalf("Render(%s, %+v) = %q, want %q", event, a, got, want)
			}
		}
	})
}
