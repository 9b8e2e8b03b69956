package main

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/seed6639df8c/courier/decision"
	"github.com/seed6639df8c/courier/provenance"
	"github.com/seed6639df8c/courier/wire"
)

// output is the decision as encoding/json printed it before
// appendDecision: the oracle appendDecision must match byte for byte.
type output struct {
	RequestID         string            `json:"requestId"`
	Approved          bool              `json:"approved"`
	State             string            `json:"state"`
	DenialReason      *string           `json:"denialReason"`
	Unavailable       bool              `json:"unavailable"`
	DecidedBy         provenance.Source `json:"decidedBy"`
	SessionGrantWidth string            `json:"sessionGrantWidth,omitempty"`
}

// viaEncodingJSON prints d as report did with encoding/json.
func viaEncodingJSON(t testing.TB, requestID string, d decision.Decision) string {
	t.Helper()
	out := output{
		RequestID: requestID, Approved: d.Approved(), State: string(d.State),
		Unavailable: d.Unavailable(), DecidedBy: d.DecidedBy, SessionGrantWidth: string(d.SessionGrantWidth),
	}
	if d.DenialReason != "" {
		out.DenialReason = &d.DenialReason
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(out); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

// decisionsOf are decisions of every state, with s in every string.
func decisionsOf(s string) []decision.Decision {
	rule := provenance.Rule{Surface: "bash", Pattern: provenance.Str(s), Origin: provenance.Str("global")}
	fwd := provenance.Nest(provenance.Str(s), rule)
	return []decision.Decision{
		{State: decision.StateApproved, DecidedBy: fwd},
		{State: decision.StateDenied, DenialReason: s, DecidedBy: provenance.Nest(nil, provenance.User{Via: provenance.ViaDialog})},
		{State: decision.StateApprovedForSession, DecidedBy: fwd, SessionGrantWidth: wire.GrantFamily},
		{State: decision.StateApprovedForSession, DecidedBy: fwd, SessionGrantWidth: wire.GrantWidth(s)},
		decision.NobodyAnswered(s),
		{State: decision.State(s), DenialReason: s},
		{},
	}
}

func TestAppendDecisionMatchesEncodingJSON(t *testing.T) {
	for _, s := range []string{"", "Session 'p' did not answer within 600s", `<"quoted" & \ >`, "tab\t\x00\x7f bad \xff line\u2028", "日本 🎉"} {
		for _, id := range []string{"perm-0a1b", s} {
			for _, d := range decisionsOf(s) {
				if got, want := string(appendDecision(nil, id, d)), viaEncodingJSON(t, id, d); got != want {
					t.Errorf("appendDecision(%q, %#v) =\n%s\nwant\n%s", id, d, got, want)
				}
			}
		}
	}
}

// TestReportPrintsTheDecision: the golden line for a rule's allow
// forwarded by the parent, as `child ask` prints it.
func TestReportPrintsTheDecision(t *testing.T) {
	d := decision.Decision{State: decision.StateApproved, DecidedBy: provenance.Nest(provenance.Str("s1"),
		provenance.Rule{Surface: "bash", Pattern: provenance.Str("git status *"), Origin: provenance.Str("global")})}
	var stdout, stderr bytes.Buffer
	if code := report(&stdout, &stderr, "perm-419f4cd9-9e9b-4c6b-b4be-601d71396adc", d); code != exitAllowed {
		t.Errorf("exit %d, want %d", code, exitAllowed)
	}
	const want = `{"requestId":"perm-419f4cd9-9e9b-4c6b-b4be-601d71396adc","approved":true,"state":"approved","denialReason":null,"unavailable":false,"decidedBy":{"kind":"forwarded","responderSessionId":"s1","decision":{"kind":"rule","surface":"bash","pattern":"git status *","origin":"global"}}}` + "\n"
	if stdout.String() != want {
		t.Errorf("stdout =\n%s\nwant\n%s", stdout.String(), want)
	}
}

// FuzzAppendDecision: for any strings, the printed decision is what
// encoding/json printed.
func FuzzAppendDecision(f *testing.F) {
	f.Add("perm-0a1b", "Could not resolve a parent session", uint8(0))
	f.Add("\xff", "\u2028<>&", uint8(4))
	f.Fuzz(func(t *testing.T, id, s string, pick uint8) {
		ds := decisionsOf(s)
		d := ds[int(pick)%len(ds)]
		if got, want := string(appendDecision(nil, id, d)), viaEncodingJSON(t, id, d); got != want {
			t.Fatalf("appendDecision(%q, %#v) =\n%s\nwant\n%s", id, d, got, want)
		}
	})
}
