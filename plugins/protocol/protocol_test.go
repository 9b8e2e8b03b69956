package protocol

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/seed6639df8c/courier/authorizer"
	pb "github.com/seed6639df8c/courier/plugins/gen/courier/authorizer/v1"
)

func fullEvidence() authorizer.Evidence {
	b, cwd := "/repo/file", "/repo"
	return authorizer.Evidence{
		RequestID: "r1", Source: "tool_call", Surface: "bash", Value: "git push", Message: "may I?",
		Forwarding: authorizer.Forwarding{RequesterAgentName: "Explore", RequesterSessionID: "child"},
		Access: &authorizer.AccessFacts{Surface: "bash", MatchValues: []string{"git push"}, BoundaryValue: &b,
			Floor: "<opaque-bash-wrapper>", AskingUnits: []authorizer.AskingUnit{{Command: "git push", Floor: "f"}}},
		SessionApproval: []authorizer.SuggestedGrant{{Surface: "bash", Pattern: "git push *"}},
		Payload:         json.RawMessage(`{"k":1}`),
		RequesterCwd:    &cwd,
		Principal:       &authorizer.Principal{SessionID: "child", AgentName: "Explore"},
		Bash:            &authorizer.BashInput{Complete: "npm test && git push", Triggering: []string{"git push"}},
		Conversation: &authorizer.Conversation{Forwarded: true, RequesterAgent: "Explore", Items: []authorizer.ConversationItem{
			{Role: "user", Text: "push the release"}, {Role: "assistant", Text: "summary", Derived: true},
		}},
	}
}

func TestEvidenceRoundTrip(t *testing.T) {
	noUnits := fullEvidence()
	noUnits.Bash.Triggering = []string{}
	noUnits.RequesterCwd, noUnits.Principal = nil, nil
	for name, ev := range map[string]authorizer.Evidence{
		"full":    fullEvidence(),
		"minimal": {RequestID: "r2", Forwarding: authorizer.Forwarding{RequesterAgentName: "a", RequesterSessionID: "s"}},
		// No unit asked: an empty list, not nil, on both sides; a
		// conversation is a disclosure of its own.
		"no units, only the conversation disclosed": noUnits,
	} {
		wire, err := proto.Marshal(EncodeEvidence(ev))
		if err != nil {
			t.Fatal(err)
		}
		var back pb.Evidence
		if err := proto.Unmarshal(wire, &back); err != nil {
			t.Fatal(err)
		}
		if got := DecodeEvidence(&back); !reflect.DeepEqual(got, ev) {
			t.Errorf("%s:\ngot  %+v\nwant %+v", name, got, ev)
		}
	}
}

// A child's invalid UTF-8 must not make the call fail to marshal (which
// would let a child choose the link's failure verdict).
func TestEncodeEvidenceInvalidUTF8(t *testing.T) {
	ev := fullEvidence()
	ev.Value = "rm \xff\xfe"
	ev.Access.MatchValues = []string{"\xc3"}
	if _, err := proto.Marshal(EncodeEvidence(ev)); err != nil {
		t.Fatalf("marshal: %v", err)
	}
}

func TestVerdictCoding(t *testing.T) {
	meta := authorizer.Meta{Model: "claude-x", PromptVersion: "judge-v1", InputTokens: 812, OutputTokens: 40, LatencyMs: 930}
	for _, v := range []authorizer.Verdict{
		{Kind: authorizer.Allow}, {Kind: authorizer.Deny, Reason: "no"}, {Kind: authorizer.Defer},
		{Kind: authorizer.Deny, Reason: "no", Code: "force_push", Meta: meta},
		{Kind: authorizer.Defer, Reason: "cwd needed", Code: "missing_cwd", Meta: meta},
		{Kind: authorizer.Allow, Code: "authorized", Meta: meta},
	} {
		wire, err := proto.Marshal(EncodeVerdict(v))
		if err != nil {
			t.Fatal(err)
		}
		var back pb.AuthorizeResponse
		if err := proto.Unmarshal(wire, &back); err != nil {
			t.Fatal(err)
		}
		got, err := DecodeVerdict(&back)
		if err != nil || got != v {
			t.Errorf("%+v: %+v %v", v, got, err)
		}
	}
	// An allow's reason is not sent; a plugin's invalid UTF-8 cannot make
	// its answer fail to marshal.
	if got, _ := DecodeVerdict(EncodeVerdict(authorizer.Verdict{Kind: authorizer.Allow, Reason: "x"})); got.Reason != "" {
		t.Errorf("allow reason sent: %+v", got)
	}
	if _, err := proto.Marshal(EncodeVerdict(authorizer.Verdict{Kind: authorizer.Defer, Reason: "\xff", Code: "\xfe", Meta: authorizer.Meta{Model: "\xc3"}})); err != nil {
		t.Errorf("invalid UTF-8: %v", err)
	}
	for _, resp := range []*pb.AuthorizeResponse{nil, {}, {Verdict: 42}, EncodeVerdict(authorizer.Verdict{Kind: 9})} {
		if _, err := DecodeVerdict(resp); !errors.Is(err, authorizer.ErrInvalidVerdict) {
			t.Errorf("%v: %v, want ErrInvalidVerdict", resp, err)
		}
	}
}

// testAuthz records what it saw under a mutex: the race detector sees no
// ordering through the socket between the server's write and the test's
// read.
type testAuthz struct {
	mu   sync.Mutex
	seen authorizer.Evidence
}

func (a *testAuthz) Authorize(_ context.Context, ev authorizer.Evidence) (authorizer.Verdict, error) {
	a.mu.Lock()
	a.seen = ev
	a.mu.Unlock()
	switch ev.Value {
	case "panic":
		panic("boom")
	case "error":
		return authorizer.Verdict{}, errors.New("cannot judge")
	}
	return authorizer.Verdict{Kind: authorizer.Deny, Reason: "seen " + ev.Value}, nil
}

func (a *testAuthz) Describe(context.Context) (Description, error) {
	return Description{Name: "test", Version: "1.2.3"}, nil
}

func (a *testAuthz) Health(context.Context) error { return errors.New("no key") }

// The glue between the two sides, over a real in-process gRPC connection.
func TestGRPCGlue(t *testing.T) {
	impl := &testAuthz{}
	// client.Close stops the server through go-plugin's Shutdown RPC; a
	// second, deferred server.Stop would race with it inside go-plugin.
	client, _ := plugin.TestPluginGRPCConn(t, false, PluginSet(impl))
	defer client.Close()
	raw, err := client.Dispense(PluginName)
	if err != nil {
		t.Fatal(err)
	}
	c := raw.(*Client)
	ev := fullEvidence()
	v, err := c.Authorize(t.Context(), ev)
	if err != nil || v.Kind != authorizer.Deny || v.Reason != "seen git push" {
		t.Fatalf("%v %v", v, err)
	}
	impl.mu.Lock()
	seen := impl.seen
	impl.mu.Unlock()
	if !reflect.DeepEqual(seen, ev) {
		t.Errorf("plugin saw %+v", seen)
	}
	ev.Value = "panic"
	if _, err := c.Authorize(t.Context(), ev); status.Code(err) != codes.Internal {
		t.Errorf("panic: %v, want Internal", err)
	}
	ev.Value = "error"
	if _, err := c.Authorize(t.Context(), ev); status.Code(err) != codes.Unknown {
		t.Errorf("error: %v, want Unknown", err)
	}
	if d, err := c.Describe(t.Context()); err != nil || d.Name != "test" || d.Version != "1.2.3" {
		t.Errorf("describe %+v %v", d, err)
	}
	if err := c.Health(t.Context()); status.Code(err) != codes.Unavailable {
		t.Errorf("health %v", err)
	}
}

// An old plugin's answer (verdict and reason only, as protocol v1 first
// shipped) reads as before: no code, no metadata.
func TestOldPluginAnswer(t *testing.T) {
	var old []byte
	old = protowire.AppendTag(old, 1, protowire.VarintType)
	old = protowire.AppendVarint(old, uint64(pb.Verdict_VERDICT_DENY))
	old = protowire.AppendTag(old, 2, protowire.BytesType)
	old = protowire.AppendString(old, "use pnpm")
	var resp pb.AuthorizeResponse
	if err := proto.Unmarshal(old, &resp); err != nil {
		t.Fatal(err)
	}
	if v, err := DecodeVerdict(&resp); err != nil || v != (authorizer.Verdict{Kind: authorizer.Deny, Reason: "use pnpm"}) {
		t.Errorf("%+v %v", v, err)
	}
}

// The fields protocol v1 first shipped keep their numbers and kinds: a
// plugin built against the first authorizer.proto (the Python example,
// any third-party plugin) reads every later copy's messages as before and
// skips what it does not know. Fields are only ever added.
func TestFirstFieldsKeepTheirNumbers(t *testing.T) {
	first := map[string]string{
		"AuthorizeRequest.evidence": "1 message", "AuthorizeResponse.verdict": "1 enum", "AuthorizeResponse.reason": "2 string",
		"Evidence.request_id": "1 string", "Evidence.source": "2 string", "Evidence.display_surface": "3 string",
		"Evidence.display_value": "4 string", "Evidence.message": "5 string", "Evidence.forwarding": "6 message",
		"Evidence.access": "7 message", "Evidence.session_approval": "8 message", "Evidence.payload_json": "9 string",
		"Evidence.disclosure": "10 message", "Forwarding.requester_agent_name": "1 string", "Forwarding.requester_session_id": "2 string",
		"AccessFacts.surface": "1 string", "AccessFacts.match_values": "2 string", "AccessFacts.boundary_value": "3 string",
		"AccessFacts.floor": "4 string", "AccessFacts.asking_units": "5 message", "AskingUnit.command": "1 string",
		"AskingUnit.floor": "2 string", "SessionApproval.grants": "1 message", "Grant.surface": "1 string", "Grant.pattern": "2 string",
		"Disclosure.requester_cwd": "1 string", "Disclosure.principal": "2 message", "Principal.session_id": "1 string",
		"Principal.agent_name": "2 string",
	}
	msgs := pb.File_courier_authorizer_v1_authorizer_proto.Messages()
	for key, want := range first {
		msgName, field, _ := strings.Cut(key, ".")
		md := msgs.ByName(protoreflect.Name(msgName))
		if md == nil {
			t.Errorf("message %s is gone", msgName)
			continue
		}
		fd := md.Fields().ByName(protoreflect.Name(field))
		if fd == nil {
			t.Errorf("%s is gone", key)
			continue
		}
		if got := fmt.Sprintf("%d %s", fd.Number(), fd.Kind()); got != want {
			t.Errorf("%s is %s, was %s", key, got, want)
		}
	}
}
