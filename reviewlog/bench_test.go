package reviewlog

import (
	"io"
	"testing"
	"time"

	"github.com/seed6639df8c/courier/provenance"
)

// The shapes below copy what serve.(*Broker) writes for one rule-resolved
// ask (forwarded_permission.auto_approved, then .approved) and for an ask an
// authorizer answered through a parent, so the benchmark prices the entries
// the broker actually spends its time on.

func autoApprovedDetails() map[string]any {
	return map[string]any{
		"requestId":          "perm-1757000000123-4f2a9c",
		"source":             "primary",
		"requesterAgentName": "code-reviewer",
		"requesterSessionId": "019a3b7c-5d2e-7f10-8a4b-2c6d9e0f1a3b",
		"targetSessionId":    "019a3b7c-4c1d-7e00-9b3a-1b5c8d9e0f2a",
		"requestPath":        "/home/dev/.pi/agent/permission-forwarding/sessions/019a3b7c-4c1d-7e00-9b3a-1b5c8d9e0f2a/requests/perm-1757000000123-4f2a9c.json",
		"decidedBy": provenance.Rule{
			Surface: "bash",
			Pattern: provenance.Str("git status*"),
			Origin:  provenance.Str("global"),
		},
	}
}

func approvedDetails() map[string]any {
	return map[string]any{
		"requestId":          "perm-1757000000123-4f2a9c",
		"source":             "primary",
		"requesterAgentName": "code-reviewer",
		"requesterSessionId": "019a3b7c-5d2e-7f10-8a4b-2c6d9e0f1a3b",
		"targetSessionId":    "019a3b7c-4c1d-7e00-9b3a-1b5c8d9e0f2a",
		"responsePath":       "/home/dev/.pi/agent/permission-forwarding/sessions/019a3b7c-4c1d-7e00-9b3a-1b5c8d9e0f2a/responses/perm-1757000000123-4f2a9c.json",
		"approved":           true,
		"resolution":         "approved",
		"denialReason":       nil,
		"decidedBy": provenance.Rule{
			Surface: "bash",
			Pattern: provenance.Str("git status*"),
			Origin:  provenance.Str("global"),
		},
	}
}

// forwardedDetails is a child's terminal entry for an ask its parent's
// authorizer denied, with the display facts and a link's report nested as
// plain maps, the way chain and forward build them.
func forwardedDetails() map[string]any {
	reason := "the command writes outside the workspace: \"/etc/hosts\" is not under /home/dev/src"
	return map[string]any{
		"requestId":    "perm-1757000000456-0b1c2d",
		"approved":     false,
		"state":        "denied_with_reason",
		"resolution":   "authorizer_denied",
		"denialReason": reason,
		"latencyMs":    12.345,
		"createdAt":    int64(1757000000456),
		"links":        []string{"model-judge", "path-guard"},
		"facts": map[string]any{
			"toolName": "bash",
			"command":  "echo 127.0.0.1 example.test >> /etc/hosts",
			"cwd":      "/home/dev/src/courier",
			"headers":  map[string]any{"Authorization": "Bearer abc.def", "accept": "*/*"},
		},
		"link": map[string]any{"name": "model-judge", "verdict": "deny", "capped": false, "attempt": 1},
		"decidedBy": provenance.Forwarded{
			ResponderSessionID: provenance.Str("019a3b7c-4c1d-7e00-9b3a-1b5c8d9e0f2a"),
			Decision:           provenance.Authorizer{Name: "model-judge", Verdict: provenance.VerdictDeny, Reason: &reason},
		},
	}
}

type benchEntry struct {
	event   string
	details map[string]any
}

// BenchmarkWrite measures one Write of each shape to io.Discard, so the
// figure is the cost of building the line, not of the disk. "ask" is the
// pair the broker writes for every rule-resolved ask.
func BenchmarkWrite(b *testing.B) {
	shapes := []struct {
		name    string
		entries []benchEntry
	}{
		{"auto_approved", []benchEntry{{ForwardedAutoApproved, autoApprovedDetails()}}},
		{"approved", []benchEntry{{ForwardedApproved, approvedDetails()}}},
		{"ask", []benchEntry{{ForwardedAutoApproved, autoApprovedDetails()}, {ForwardedApproved, approvedDetails()}}},
		{"forwarded_nested", []benchEntry{{RequestDenied, forwardedDetails()}}},
	}
	for _, s := range shapes {
		b.Run(s.name, func(b *testing.B) {
			l := newLog(io.Discard, nil, config{width: DefaultFieldWidth, extension: DefaultExtension, now: time.Now})
			b.ReportAllocs()
			for b.Loop() {
				for _, e := range s.entries {
					if err := l.Write(e.event, e.details); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}
