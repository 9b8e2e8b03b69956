package provenance

import "testing"

// TestDescribe: each decider, and a forwarded one hop by hop, as child
// ask's summary line and a hook's denial message read them.
func TestDescribe(t *testing.T) {
	parent, top := "parent", "top"
	tests := []struct {
		s    Source
		want string
	}{
		{User{Via: ViaDialog}, "the user"},
		{Rule{Surface: "bash", Pattern: Str("git *")}, `rule bash "git *"`},
		{Rule{Surface: "bash"}, "rule bash"},
		{SessionApproval{Surface: "path_write", Pattern: Str("/w/*")}, `a session grant path_write "/w/*"`},
		{Authorizer{Name: "denylist"}, `authorizer "denylist"`},
		{Unavailable{Reason: "gone"}, "nobody (gone)"},
		{Nest(&top, Nest(&parent, User{Via: ViaDialog})), `the user at session "parent" at session "top"`},
		{Forwarded{ResponderSessionID: &parent}, `session "parent" (which did not say who decided)`},
		{Forwarded{Decision: Yolo{}}, "yolo mode at an unknown session"},
		{nil, "an unknown decider"},
	}
	for _, tt := range tests {
		if got := Describe(tt.s); got != tt.want {
			t.Errorf("Describe(%#v) = %q, want %q", tt.s, got, tt.want)
		}
	}
}
