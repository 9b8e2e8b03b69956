package authorizer

import (
	"testing"

	"github.com/seed6639df8c/courier/wire"
)

func bashAsk(value string) wire.Request {
	return wire.Request{
		ID: "r1", RequesterSessionID: "child", TargetSessionID: "parent", RequesterAgentName: "Explore",
		Surface: "bash", Value: value,
		AccessIntent: &wire.AccessIntent{Surface: "bash", MatchValues: []string{value}, RequesterCwd: "/w",
			Principal: wire.Principal{SessionID: "child", AgentName: "Explore"}},
	}
}

func TestEnvelope(t *testing.T) {
	for _, tc := range []struct {
		access, display string
		noAccess        bool
		delegable       bool
	}{
		{access: "bash", display: "bash", delegable: true},
		{access: "write", display: "write", delegable: true},
		{access: "path", display: "write"},
		{access: "path_read", display: "read"},
		{access: "path_write", display: "bash"},
		{access: "external_directory", display: "read"},
		{access: "external_directory_read", display: "bash"},
		{access: "external_directory_write", display: "bash"},
		{access: " Path_Write ", display: "bash"},
		{noAccess: true, display: "bash", delegable: true},
		{noAccess: true, display: "external_directory"},
		{noAccess: true, display: ""},
		{access: "", display: "", noAccess: true},
		{access: "bash", display: "path", delegable: true}, // the gate surface wins, as in pi
	} {
		req := bashAsk("x")
		req.Surface = tc.display
		req.AccessIntent.Surface = tc.access
		if tc.noAccess {
			req.AccessIntent = nil
		}
		ev := Project(req, Disclosure{})
		if got := Delegable(ev); got != tc.delegable {
			t.Errorf("%+v: delegable %v", tc, got)
		}
		for _, k := range []VerdictKind{Allow, Deny, Defer} {
			v, capped := Envelope(Verdict{Kind: k, Reason: "r"}, ev)
			wantCapped := k == Allow && !tc.delegable
			if capped != wantCapped || (capped && v.Kind != Defer) || (!capped && v.Kind != k) {
				t.Errorf("%+v %v: got %v capped %v", tc, k, v.Kind, capped)
			}
		}
	}
}
