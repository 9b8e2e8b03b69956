package agenthook

import (
	"bytes"
	"encoding/json"
)

// Verdict is what the hook answers the agent.
type Verdict int

// The verdicts. VerdictNone prints nothing: the agent's own flow decides.
const (
	VerdictNone Verdict = iota
	VerdictAllow
	VerdictDeny
)

// String names the verdict for logs and tests.
func (v Verdict) String() string {
	switch v {
	case VerdictAllow:
		return "allow"
	case VerdictDeny:
		return "deny"
	}
	return "none"
}

// Answer is the hook's answer: a verdict and the line that explains it
// (who decided and why, as child ask prints it), which a denial carries to
// the agent and an allow, where the agent shows it, to the user.
type Answer struct {
	Verdict Verdict
	Message string
}

// MessagePrefix starts every message the hook gives an agent, so the
// model and the user can tell courier's answer from the agent's own.
const MessagePrefix = "courier: "

// The output shapes (docs/hooks.md lists what each agent honours). The
// field order is the one the references show; encoding/json keeps it.
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

// Render is the exact stdout for answer a to event on cli, nil when
// nothing is printed:
//
//   - VerdictNone prints nothing on every agent and event;
//   - PermissionRequest: {"hookSpecificOutput":{"hookEventName":
//     "PermissionRequest","decision":{"behavior":"allow"}}} and, on a deny,
//     "behavior":"deny","message":M — the same bytes for both agents;
//   - PreToolUse on Claude Code: permissionDecision allow or deny with
//     permissionDecisionReason M;
//   - PreToolUse on Codex: a deny as on Claude Code (the reason is never
//     empty), and an allow prints nothing: Codex honours only denies there,
//     and an ignored allow would read as a decision that was not taken.
//     Codex's own flow goes on, and its PermissionRequest hook asks again
//     if Codex would prompt (docs/hooks.md: wire PermissionRequest).
func Render(cli CLI, event EventName, a Answer) []byte {
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
		return nil // cannot happen: strings only
	}
	return b.Bytes()
}

// message is a's message, never empty: Codex ignores a PreToolUse deny
// without a reason.
func (a Answer) message() string {
	switch {
	case a.Message != "":
		return a.Message
	case a.Verdict == VerdictAllow:
		return MessagePrefix + "allowed"
	}
	return MessagePrefix + "denied"
}
