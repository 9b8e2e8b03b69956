package protocol

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"sync"
	"testing"

	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

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
	}
}

func TestEvidenceRoundTrip(t *testing.T) {
	for name, ev := range map[string]authorizer.Evidence{
		"full":    fullEvidence(),
		"minimal": {RequestID: "r2", Forwarding: authorizer.Forwarding{RequesterAgentName: "a", RequesterSessionID: "s"}},
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
	for _, v := range []authorizer.Verdict{{Kind: authorizer.Allow}, {Kind: authorizer.Deny, Reason: "no"}, {Kind: authorizer.Defer}} {
		got, err := DecodeVerdict(EncodeVerdict(v))
		if err != nil || got != v {
			t.Errorf("%v: %v %v", v, got, err)
		}
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
