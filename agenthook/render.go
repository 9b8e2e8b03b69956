package agenthook

import "github.com/seed6639df8c/courier/internal/strictjson"

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
	// Written by hand: encoding/json's first use in a fresh process builds
	// its type cache for a tenth of a millisecond, on the agent's critical
	// path. render_oracle_test.go checks the bytes against encoding/json.
	var b []byte
	switch event {
	case PermissionRequest:
		b = append(b, `{"hookSpecificOutput":{"hookEventName":"PermissionRequest","decision":{"behavior":`...)
		if a.Verdict == VerdictDeny {
			b = append(b, `"deny","message":`...)
			b = strictjson.AppendString(b, a.message())
		} else {
			b = append(b, `"allow"`...)
		}
		b = append(b, "}}}\n"...)
	case PreToolUse:
		if a.Verdict == VerdictAllow && cli == Codex {
			return nil
		}
		decision := `"allow"`
		if a.Verdict == VerdictDeny {
			decision = `"deny"`
		}
		b = append(b, `{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":`...)
		b = append(b, decision...)
		b = append(b, `,"permissionDecisionReason":`...)
		b = strictjson.AppendString(b, a.message())
		b = append(b, "}}\n"...)
	default:
		return nil
	}
	return b
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
