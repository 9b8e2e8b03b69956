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

// The same facts as autoApprovedDetails and approvedDetails, as entries.
func autoApprovedEntry() ForwardedAutoApprovedEntry {
	d := autoApprovedDetails()
	return ForwardedAutoApprovedEntry{
		RequestID:   d["requestId"].(string),
		Parties:     benchParties(d),
		RequestPath: d["requestPath"].(string),
		DecidedBy:   d["decidedBy"].(provenance.Rule),
	}
}

func approvedEntry() ForwardedApprovedEntry {
	d := approvedDetails()
	return ForwardedApprovedEntry{
		RequestID:    d["requestId"].(string),
		Parties:      benchParties(d),
		ResponsePath: d["responsePath"].(string),
		Resolution:   d["resolution"].(string),
		DecidedBy:    d["decidedBy"].(provenance.Rule),
	}
}

func benchParties(d map[string]any) Parties {
	return Parties{
		RequesterAgentName: d["requesterAgentName"].(string),
		RequesterSessionID: d["requesterSessionId"].(string),
		TargetSessionID:    d["targetSessionId"].(string),
	}
}

// responseReceived is a child's entry for an ask its parent's authorizer
// denied, and the map its call site built for it before entries had types.
func responseReceived() (ForwardedResponseReceivedEntry, map[string]any) {
	reason := "the command writes outside the workspace: \"/etc/hosts\" is not under /home/dev/src"
	by := provenance.Forwarded{
		ResponderSessionID: provenance.Str("019a3b7c-4c1d-7e00-9b3a-1b5c8d9e0f2a"),
		Decision:           provenance.Authorizer{Name: "model-judge", Verdict: provenance.VerdictDeny, Reason: &reason},
	}
	e := ForwardedResponseReceivedEntry{
		RequestID:          "perm-1757000000456-0b1c2d",
		TargetSessionID:    "019a3b7c-4c1d-7e00-9b3a-1b5c8d9e0f2a",
		ResponsePath:       "/home/dev/.pi/agent/permission-forwarding/sessions/019a3b7c-4c1d-7e00-9b3a-1b5c8d9e0f2a/responses/perm-1757000000456-0b1c2d.json",
		State:              "denied_with_reason",
		DenialReason:       reason,
		ResponderSessionID: "019a3b7c-4c1d-7e00-9b3a-1b5c8d9e0f2a",
		DecidedBy:          by,
	}
	return e, map[string]any{
		"requestId": e.RequestID, "approved": false, "state": e.State, "denialReason": reason,
		"responderSessionId": e.ResponderSessionID, "targetSessionId": e.TargetSessionID, "responsePath": e.ResponsePath, "decidedBy": by,
	}
}

type benchEntry struct {
	event   string
	details map[string]any
}

// BenchmarkWrite measures the entries of each shape to io.Discard, so the
// figure is the cost of building the line, not of the disk: "ask" is the
// pair the broker writes for every rule-resolved ask. The entries go
// through Emit, except forwarded_nested, a map of free-form values through
// Write.
func BenchmarkWrite(b *testing.B) {
	received, _ := responseReceived()
	shapes := []struct {
		name    string
		entries []Entry
		details []benchEntry
	}{
		{name: "auto_approved", entries: []Entry{autoApprovedEntry()}},
		{name: "approved", entries: []Entry{approvedEntry()}},
		{name: "ask", entries: []Entry{autoApprovedEntry(), approvedEntry()}},
		{name: "response_received", entries: []Entry{received}},
		{name: "forwarded_nested", details: []benchEntry{{RequestDenied, forwardedDetails()}}},
	}
	for _, s := range shapes {
		b.Run(s.name, func(b *testing.B) {
			l := newLog(io.Discard, nil, config{width: DefaultFieldWidth, extension: DefaultExtension, now: time.Now})
			b.ReportAllocs()
			for b.Loop() {
				for _, e := range s.entries {
					if err := l.Emit(e); err != nil {
						b.Fatal(err)
					}
				}
				for _, e := range s.details {
					if err := l.Write(e.event, e.details); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}
