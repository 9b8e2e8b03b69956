package decision

import (
	"reflect"
	"strings"
	"testing"

	"github.com/seed6639df8c/courier/provenance"
	"github.com/seed6639df8c/courier/wire"
)

func TestConstructors(t *testing.T) {
	rule := provenance.Rule{Surface: "bash", Pattern: provenance.Str("npm *")}
	tests := []struct {
		name        string
		d           Decision
		approved    bool
		unavailable bool
		state       State
	}{
		{"allow", Allow(rule), true, false, StateApproved},
		{"deny", Deny("", rule), false, false, StateDenied},
		{"deny with reason", Deny("Use pnpm instead", rule), false, false, StateDeniedWithReason},
		{"nobody answered", NobodyAnswered("Session 'p' is not serving forwarded permission requests"), false, true, StateDenied},
		{"relayed unavailable", FromResponse(wire.Response{State: wire.StateDenied, ResponderSessionID: "p", DecidedBy: provenance.Unavailable{Reason: "r"}}), false, true, StateDenied},
		{"user denial is not unavailable", Deny("", provenance.User{Via: provenance.ViaDialog}), false, false, StateDenied},
	}
	for _, tt := range tests {
		if tt.d.Approved() != tt.approved || tt.d.Unavailable() != tt.unavailable || tt.d.State != tt.state {
			t.Errorf("%s: approved=%v unavailable=%v state=%s; want %v %v %s", tt.name, tt.d.Approved(), tt.d.Unavailable(), tt.d.State, tt.approved, tt.unavailable, tt.state)
		}
		if tt.d.DecidedBy == nil {
			t.Errorf("%s: no decider", tt.name)
		}
	}
	if d := NobodyAnswered("why"); d.DenialReason != "why" || d.DecidedBy != (provenance.Unavailable{Reason: "why"}) {
		t.Errorf("NobodyAnswered: reason and decider drifted: %+v", d)
	}
}

func TestWholeSessionGrantGoesOnTheWireAsApproved(t *testing.T) {
	by := provenance.User{Via: provenance.ViaDialog}
	// The operator's edited grants stay at the broker: the wire answer is
	// the same with them as without.
	for _, grants := range [][]wire.SuggestedGrant{nil, {{Surface: "bash", Pattern: "curl x*"}}} {
		d := Decision{State: StateApprovedForServingSession, DecidedBy: by, SessionGrantWidth: wire.GrantFamily, Grants: grants}
		r := d.Response("parent", 42)
		want := wire.Response{Approved: true, State: wire.StateApproved, ResponderSessionID: "parent", RespondedAt: 42, DecidedBy: by}
		if !reflect.DeepEqual(r, want) {
			t.Errorf("Response = %+v, want %+v", r, want)
		}
		data, err := wire.EncodeResponse(r)
		if err != nil {
			t.Errorf("not encodable: %v", err)
		}
		if strings.Contains(string(data), "curl") {
			t.Errorf("the edited grants reached the wire: %s", data)
		}
	}
}

func TestResponseRoundTripNestsTheResponder(t *testing.T) {
	by := provenance.Authorizer{Name: "deny-list", Verdict: provenance.VerdictDeny, Reason: provenance.Str("no")}
	for _, d := range []Decision{
		Allow(by), Deny("no", by), NobodyAnswered("gone"),
		{State: StateApprovedForSession, DecidedBy: provenance.User{Via: provenance.ViaDialog}, SessionGrantWidth: wire.GrantFamily},
	} {
		got := FromResponse(d.Response("parent", 1))
		want := d
		want.DecidedBy = provenance.Forwarded{ResponderSessionID: provenance.Str("parent"), Decision: d.DecidedBy}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("round trip of %+v = %+v", d, got)
		}
	}
	// An older responder sent no decider: the child records decision null.
	got := FromResponse(wire.Response{Approved: true, State: wire.StateApproved, ResponderSessionID: "old"})
	if f, ok := got.DecidedBy.(provenance.Forwarded); !ok || f.Decision != nil || *f.ResponderSessionID != "old" {
		t.Errorf("legacy response decider = %#v", got.DecidedBy)
	}
}
