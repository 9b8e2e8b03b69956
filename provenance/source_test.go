package provenance

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

func TestRoundTripEveryKind(t *testing.T) {
	tests := []struct {
		name string
		src  Source
		wire string
	}{
		{"user", User{Via: ViaDialog}, `{"kind":"user","via":"dialog"}`},
		{"authorizer allow", Authorizer{Name: "deny-list", Verdict: VerdictAllow}, `{"kind":"authorizer","name":"deny-list","verdict":"allow","reason":null}`},
		{"authorizer deny", Authorizer{Name: "judge", Verdict: VerdictDeny, Reason: Str("use <pnpm> & not npm")}, `{"kind":"authorizer","name":"judge","verdict":"deny","reason":"use <pnpm> & not npm"}`},
		{"rule", Rule{Surface: "bash", Pattern: Str("git *"), Origin: Str("global")}, `{"kind":"rule","surface":"bash","pattern":"git *","origin":"global"}`},
		{"rule nulls", Rule{Surface: "bash"}, `{"kind":"rule","surface":"bash","pattern":null,"origin":null}`},
		{"session approval", SessionApproval{Surface: "bash", Pattern: Str("npm *")}, `{"kind":"session_approval","surface":"bash","pattern":"npm *"}`},
		{"yolo", Yolo{Pattern: Str("<opaque-bash-wrapper>")}, `{"kind":"yolo","pattern":"<opaque-bash-wrapper>"}`},
		{"yolo null", Yolo{}, `{"kind":"yolo","pattern":null}`},
		{"infrastructure read", InfrastructureRead{}, `{"kind":"infrastructure_read"}`},
		{"unavailable", Unavailable{Reason: "Session 'p' is not serving forwarded permission requests"}, `{"kind":"unavailable","reason":"Session 'p' is not serving forwarded permission requests"}`},
		{"gate error", GateError{Reason: "boom"}, `{"kind":"gate_error","reason":"boom"}`},
		{"forwarded", Forwarded{ResponderSessionID: Str("parent"), Decision: User{Via: ViaSelect}}, `{"kind":"forwarded","responderSessionId":"parent","decision":{"kind":"user","via":"select"}}`},
		{"forwarded null", Forwarded{}, `{"kind":"forwarded","responderSessionId":null,"decision":null}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := marshal(tt.src)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.wire {
				t.Errorf("Marshal = %s\nwant      %s", got, tt.wire)
			}
			back, ok := Decode(got)
			if !ok {
				t.Fatalf("Decode(%s) = absent", got)
			}
			if !reflect.DeepEqual(back, tt.src) {
				t.Errorf("Decode = %#v, want %#v", back, tt.src)
			}
		})
	}
}

// nested returns n Forwarded frames around a rule decider.
func nested(n int) Source {
	var s Source = Rule{Surface: "bash", Pattern: Str("ls *")}
	for i := 0; i < n; i++ {
		s = Forwarded{ResponderSessionID: Str("hop"), Decision: s}
	}
	return s
}

func TestDepthBound(t *testing.T) {
	for depth := 0; depth <= MaxDepth+2; depth++ {
		raw, err := json.Marshal(nested(depth))
		if err != nil {
			t.Fatal(err)
		}
		got, ok := Decode(raw)
		if want := depth <= MaxDepth; ok != want {
			t.Fatalf("depth %d: decoded=%v, want %v", depth, ok, want)
		}
		if ok && Depth(got) != depth {
			t.Errorf("depth %d: Depth = %d", depth, Depth(got))
		}
	}
}

func TestDecodeRejects(t *testing.T) {
	tests := map[string]string{
		"not json":                           `{"kind":`,
		"array":                              `[{"kind":"user","via":"dialog"}]`,
		"string":                             `"user"`,
		"null":                               `null`,
		"no kind":                            `{"via":"dialog"}`,
		"kind not string":                    `{"kind":7}`,
		"unknown kind":                       `{"kind":"oracle"}`,
		"kind wrong case":                    `{"kind":"USER","via":"dialog"}`,
		"user without via":                   `{"kind":"user"}`,
		"user via number":                    `{"kind":"user","via":1}`,
		"user via empty":                     `{"kind":"user","via":""}`,
		"authorizer no name":                 `{"kind":"authorizer","verdict":"allow","reason":null}`,
		"authorizer defer":                   `{"kind":"authorizer","name":"x","verdict":"defer","reason":null}`,
		"authorizer reason num":              `{"kind":"authorizer","name":"x","verdict":"deny","reason":3}`,
		"rule no surface":                    `{"kind":"rule","pattern":null,"origin":null}`,
		"rule pattern object":                `{"kind":"rule","surface":"bash","pattern":{},"origin":null}`,
		"session origin ok but surface null": `{"kind":"session_approval","surface":null}`,
		"yolo pattern bool":                  `{"kind":"yolo","pattern":true}`,
		"unavailable no reason":              `{"kind":"unavailable"}`,
		"gate error reason null":             `{"kind":"gate_error","reason":null}`,
		"forwarded bad inner":                `{"kind":"forwarded","responderSessionId":"p","decision":{"kind":"user"}}`,
		"forwarded inner array":              `{"kind":"forwarded","responderSessionId":"p","decision":[]}`,
		"forwarded responder 1":              `{"kind":"forwarded","responderSessionId":1,"decision":null}`,
		"duplicate kind":                     `{"kind":"user","via":"dialog","KIND":"yolo"}`,
		"duplicate nested":                   `{"kind":"forwarded","responderSessionId":"p","decision":{"kind":"user","via":"dialog","Via":"select"}}`,
		"trailing data":                      `{"kind":"infrastructure_read"} {}`,
	}
	for name, raw := range tests {
		t.Run(name, func(t *testing.T) {
			if got, ok := Decode([]byte(raw)); ok {
				t.Errorf("Decode(%s) = %#v, want absent", raw, got)
			}
		})
	}
}

func TestDecodeTolerates(t *testing.T) {
	tests := map[string]Source{
		`{"kind":"rule","surface":"bash"}`:                        Rule{Surface: "bash"},
		`{"kind":"authorizer","name":"n","verdict":"deny"}`:       Authorizer{Name: "n", Verdict: VerdictDeny},
		`{"kind":"user","via":"dialog","extra":{"deep":[1,2,3]}}`: User{Via: ViaDialog},
		`{"kind":"forwarded"}`:                                    Forwarded{},
		`{"kind":"forwarded","responderSessionId":"p"}`:           Forwarded{ResponderSessionID: Str("p")},
		` {"kind":"infrastructure_read","reason":"ignored"} `:     InfrastructureRead{},
	}
	for raw, want := range tests {
		got, ok := Decode([]byte(raw))
		if !ok || !reflect.DeepEqual(got, want) {
			t.Errorf("Decode(%s) = %#v, %v; want %#v", raw, got, ok, want)
		}
	}
}

func TestDecodeDepthBomb(t *testing.T) {
	bomb := strings.Repeat(`{"kind":"forwarded","decision":`, 100000) + `null` + strings.Repeat(`}`, 100000)
	if _, ok := Decode([]byte(bomb)); ok {
		t.Fatal("a 100000-deep forwarded chain decoded")
	}
}

func TestEffective(t *testing.T) {
	rule := Rule{Surface: "bash", Pattern: Str("ls *")}
	tests := []struct {
		name string
		src  Source
		want Source
	}{
		{"nil", nil, nil},
		{"leaf", rule, rule},
		{"one hop", Forwarded{Decision: rule}, rule},
		{"three hops", nested(3), rule},
		{"null decision", Forwarded{ResponderSessionID: Str("old-parent")}, nil},
		{"null deep", Forwarded{Decision: Forwarded{}}, nil},
	}
	for _, tt := range tests {
		if got := Effective(tt.src); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s: Effective = %#v, want %#v", tt.name, got, tt.want)
		}
	}
}

func TestNestKeepsDeciderWithinBound(t *testing.T) {
	var s Source = Authorizer{Name: "judge", Verdict: VerdictDeny, Reason: Str("no")}
	for hop := 1; hop <= 8; hop++ {
		s = Nest(Str("hop"), s)
		raw, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		back, ok := Decode(raw)
		if !ok {
			t.Fatalf("hop %d: nested source does not decode: %s", hop, raw)
		}
		if want := min(hop, MaxDepth); Depth(back) != want {
			t.Errorf("hop %d: Depth = %d, want %d", hop, Depth(back), want)
		}
		if a, ok := Effective(back).(Authorizer); !ok || a.Name != "judge" {
			t.Errorf("hop %d: effective decider lost: %#v", hop, Effective(back))
		}
	}
}

func TestNestNullDecision(t *testing.T) {
	got := Nest(Str("parent"), nil)
	raw, _ := json.Marshal(got)
	if string(raw) != `{"kind":"forwarded","responderSessionId":"parent","decision":null}` {
		t.Errorf("Nest(nil) = %s", raw)
	}
}

func TestResolutionFor(t *testing.T) {
	tests := []struct {
		src     Source
		outcome Outcome
		want    Resolution
	}{
		{Rule{Surface: "bash"}, OutcomeApproved, ResolutionPolicyAllow},
		{Rule{Surface: "bash"}, OutcomeDenied, ResolutionPolicyDeny},
		{SessionApproval{Surface: "bash"}, OutcomeApproved, ResolutionSessionApproved},
		{InfrastructureRead{}, OutcomeApproved, ResolutionInfrastructureAutoAllowed},
		{Yolo{}, OutcomeApproved, ResolutionAutoApproved},
		{Authorizer{Name: "a", Verdict: VerdictAllow}, OutcomeApproved, ResolutionAuthorizerAllowed},
		{Authorizer{Name: "a", Verdict: VerdictDeny}, OutcomeDenied, ResolutionAuthorizerDenied},
		{Unavailable{Reason: "r"}, OutcomeDenied, ResolutionConfirmationUnavailable},
		{GateError{Reason: "r"}, OutcomeDenied, ResolutionGateError},
		{User{Via: ViaDialog}, OutcomeApproved, ResolutionUserApproved},
		{User{Via: ViaDialog}, OutcomeApprovedForSession, ResolutionUserApprovedForSession},
		{User{Via: ViaDialog}, OutcomeDenied, ResolutionUserDenied},
		{Forwarded{}, OutcomeApproved, ResolutionUserApproved},
		{Forwarded{Decision: Unavailable{Reason: "r"}}, OutcomeDenied, ResolutionConfirmationUnavailable},
		{nested(4), OutcomeApproved, ResolutionPolicyAllow},
		{nil, OutcomeDenied, ResolutionUserDenied},
	}
	for _, tt := range tests {
		if got := ResolutionFor(tt.src, tt.outcome); got != tt.want {
			t.Errorf("ResolutionFor(%#v, %v) = %s, want %s", tt.src, tt.outcome, got, tt.want)
		}
	}
}

// TestDecodeVia pins how a user's via is read: seed 000's two literals as
// they are; "terminal", which courier wrote for its tty prompt before
// issue 15, as dialog (accepted on read so that an older courier's
// responses and grant journals keep their decider, and never written
// again: re-encoding gives dialog, at any depth); anything else absent, as
// pi reads it, so courier never relays a via its readers would drop.
func TestDecodeVia(t *testing.T) {
	tests := []struct {
		raw    string
		want   Source // nil: absent
		rewire string // what courier writes for it again
	}{
		{`{"kind":"user","via":"dialog"}`, User{Via: ViaDialog}, `{"kind":"user","via":"dialog"}`},
		{`{"kind":"user","via":"select"}`, User{Via: ViaSelect}, `{"kind":"user","via":"select"}`},
		{`{"kind":"user","via":"terminal"}`, User{Via: ViaDialog}, `{"kind":"user","via":"dialog"}`},
		{`{"kind":"forwarded","responderSessionId":"p","decision":{"kind":"user","via":"terminal"}}`,
			Forwarded{ResponderSessionID: Str("p"), Decision: User{Via: ViaDialog}},
			`{"kind":"forwarded","responderSessionId":"p","decision":{"kind":"user","via":"dialog"}}`},
		{`{"kind":"user","via":"Terminal"}`, nil, ""},
		{`{"kind":"user","via":"tui"}`, nil, ""},
		{`{"kind":"user","via":"dialog "}`, nil, ""},
		{`{"kind":"forwarded","responderSessionId":"p","decision":{"kind":"user","via":"tty"}}`, nil, ""},
	}
	for _, tt := range tests {
		got, ok := Decode([]byte(tt.raw))
		if tt.want == nil {
			if ok {
				t.Errorf("Decode(%s) = %#v, want absent", tt.raw, got)
			}
			continue
		}
		if !ok || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("Decode(%s) = %#v, %v; want %#v", tt.raw, got, ok, tt.want)
			continue
		}
		again, err := json.Marshal(got)
		if err != nil || string(again) != tt.rewire {
			t.Errorf("%s written again = %s, %v; want %s", tt.raw, again, err, tt.rewire)
		}
	}
}

func FuzzDecode(f *testing.F) {
	for _, s := range []Source{nested(0), nested(4), nested(5), User{Via: ViaDialog}, Forwarded{}, Authorizer{Name: "x", Verdict: VerdictDeny, Reason: Str("r")}} {
		raw, _ := json.Marshal(s)
		f.Add(raw)
	}
	f.Add([]byte(`{"kind":"forwarded","decision":{"kind":"forwarded","decision":{"kind":"user","via":"dialog","VIA":"x"}}}`))
	f.Add([]byte(`{"kind":"user","via":"\ud800"}`))
	f.Add([]byte(`{"kind":"forwarded","decision":{"kind":"user","via":"terminal"}}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		src, ok := Decode(raw)
		if !ok {
			if src != nil {
				t.Fatalf("absent decode returned %#v", src)
			}
			return
		}
		if Depth(src) > MaxDepth {
			t.Fatalf("decoded depth %d > %d", Depth(src), MaxDepth)
		}
		if u, isUser := Effective(src).(User); isUser && !u.Via.Valid() {
			t.Fatalf("decoded a via outside the seed's union: %#v", src)
		}
		// What decodes must re-encode to something that decodes to the same value.
		again, err := json.Marshal(src)
		if err != nil {
			t.Fatalf("re-encode: %v", err)
		}
		back, ok := Decode(again)
		if !ok || !reflect.DeepEqual(back, src) {
			t.Fatalf("round trip changed %#v into %#v (%s)", src, back, again)
		}
	})
}
