package provenance_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/seed6639df8c/courier/authorizer"
	"github.com/seed6639df8c/courier/chain"
	"github.com/seed6639df8c/courier/decision"
	"github.com/seed6639df8c/courier/forward"
	"github.com/seed6639df8c/courier/mailbox"
	"github.com/seed6639df8c/courier/prompt"
	"github.com/seed6639df8c/courier/provenance"
	"github.com/seed6639df8c/courier/rules"
	"github.com/seed6639df8c/courier/serve"
	"github.com/seed6639df8c/courier/wire"
)

// seedLink is an authorizer link that answers with a fixed verdict, or
// fails.
type seedLink struct {
	v   authorizer.Verdict
	err error
}

func (seedLink) Name() string { return "judge" }
func (l seedLink) Authorize(context.Context, authorizer.Evidence) (authorizer.Verdict, error) {
	return l.v, l.err
}

// seedRequest is a 25.x bash request for value, with its access facts.
func seedRequest(value string) wire.Request {
	return wire.Request{
		ID: "perm-seed-1", CreatedAt: 1, RequesterSessionID: "child", TargetSessionID: "parent",
		RequesterAgentName: "Explore", Surface: "bash", Value: value,
		AccessIntent: &wire.AccessIntent{
			Surface: "bash", MatchValues: []string{value}, RequesterCwd: "/w",
			Principal: wire.Principal{SessionID: "child", AgentName: "Explore"},
		},
	}
}

// everyDecision builds one decision of every decider courier's broker has,
// each through the code that makes it in a real run: the recorded
// authority (rules, session grants, yolo, display-value matching), the
// authorizer chain, the operator's prompt, nobody answering, and the child
// library finding its parent not serving.
func everyDecision(t *testing.T) map[string]decision.Decision {
	t.Helper()
	const config = `{"permission": {"*": "ask", "bash": {"*": "ask", "git status *": "allow", "npm *": {"action": "deny", "reason": "Use pnpm instead"}}}}`
	policyOf := func(cfgJSON string) *rules.Policy {
		cfg, err := rules.Parse("seed.json", []byte(cfgJSON))
		if err != nil {
			t.Fatal(err)
		}
		p, err := rules.NewPolicy(cfg, rules.Options{Protected: []string{"/nonexistent/courier-mailbox"}})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	recorded := func(name string, p *rules.Policy, req wire.Request, legacy bool) decision.Decision {
		_, d, decided := serve.RecordedAuthority(p, &req, legacy)
		if !decided {
			t.Fatalf("%s: the recorded authority did not decide", name)
		}
		return d
	}
	chained := func(name string, l seedLink) decision.Decision {
		c := chain.New(nil, []chain.Member{{Link: l, Mode: chain.Enforce, OnFailure: authorizer.Deny}})
		t.Cleanup(func() { c.Close() })
		d, ok := c.Resolve(t.Context(), seedRequest("make deploy"))
		if !ok {
			t.Fatalf("%s: the chain did not decide", name)
		}
		return d
	}

	policy := policyOf(config)
	granted := policyOf(config)
	if _, err := granted.Sessions().Record(rules.WidthProven, rules.SessionGrant{Surface: "bash", Pattern: "make *"}); err != nil {
		t.Fatal(err)
	}
	legacy := seedRequest("git status --short")
	legacy.AccessIntent = nil // a pi 20.x child's request

	c := &forward.Client{Layout: mailbox.Layout{Root: t.TempDir()}, Timeout: 10 * time.Second, Grace: time.Millisecond, LivenessInterval: time.Millisecond}
	t.Cleanup(c.Close)
	notServing := c.Forward(t.Context(), seedRequest("ls"))

	return map[string]decision.Decision{
		"rule allow":               recorded("rule allow", policy, seedRequest("git status --short"), false),
		"rule deny":                recorded("rule deny", policy, seedRequest("npm test"), false),
		"rule by display value":    recorded("rule by display value", policy, legacy, true),
		"session approval":         recorded("session approval", granted, seedRequest("make test"), false),
		"yolo":                     recorded("yolo", policyOf(`{"yoloMode": true, "permission": {"*": "ask"}}`), seedRequest("make test"), false),
		"authorizer allow":         chained("authorizer allow", seedLink{v: authorizer.Verdict{Kind: authorizer.Allow}}),
		"authorizer deny":          chained("authorizer deny", seedLink{v: authorizer.Verdict{Kind: authorizer.Deny, Reason: "not on a Friday"}}),
		"gate error":               chained("gate error", seedLink{err: errors.New("the judge crashed")}),
		"user at the prompt, yes":  decision.Allow(prompt.Decider),
		"user at the prompt, no":   decision.Deny("", prompt.Decider),
		"user, with a reason":      decision.Deny("use pnpm", prompt.Decider),
		"user, for the subagent":   {State: decision.StateApprovedForSession, DecidedBy: prompt.Decider, SessionGrantWidth: wire.GrantProven},
		"user, for the session":    {State: decision.StateApprovedForServingSession, DecidedBy: prompt.Decider},
		"nobody answered":          decision.NobodyAnswered("the operator's prompt closed"),
		"child: parent not served": notServing,
	}
}

// wantKinds is the innermost decider of each case of everyDecision.
var wantKinds = map[string]provenance.Kind{
	"rule allow":               provenance.KindRule,
	"rule deny":                provenance.KindRule,
	"rule by display value":    provenance.KindRule,
	"session approval":         provenance.KindSessionApproval,
	"yolo":                     provenance.KindYolo,
	"authorizer allow":         provenance.KindAuthorizer,
	"authorizer deny":          provenance.KindAuthorizer,
	"gate error":               provenance.KindGateError,
	"user at the prompt, yes":  provenance.KindUser,
	"user at the prompt, no":   provenance.KindUser,
	"user, with a reason":      provenance.KindUser,
	"user, for the subagent":   provenance.KindUser,
	"user, for the session":    provenance.KindUser,
	"nobody answered":          provenance.KindUnavailable,
	"child: parent not served": provenance.KindUnavailable,
}

// relay is one relaying broker's hop, as the child library and the serve
// loop do it: the answer from above is decoded (forward's exchange), read
// as this session's decision (decision.FromResponse, which nests it), and
// written down as this broker's own response.
func relay(t *testing.T, from []byte, session string) []byte {
	t.Helper()
	resp, _, err := wire.DecodeResponse(from)
	if err != nil {
		t.Fatalf("decoding %s: %v", from, err)
	}
	data, err := wire.EncodeResponse(decision.FromResponse(resp).Response(session, 2))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// TestEveryResponseIsASeedMember decodes every response courier can write
// (every decider of the broker, answered directly and relayed through one
// and two relaying brokers) and what the child then records, with the
// strict reader of the seed's literal types: a pi 25.x child must be able
// to read every decidedBy courier writes.
func TestEveryResponseIsASeedMember(t *testing.T) {
	decided := everyDecision(t)
	if len(decided) != len(wantKinds) {
		t.Fatalf("%d decisions for %d expected kinds", len(decided), len(wantKinds))
	}
	for name, d := range decided {
		t.Run(name, func(t *testing.T) {
			// The site made the decider this case is about, not a
			// fallback of it (a chain that deferred, a floor).
			if d.DecidedBy == nil || provenance.Effective(d.DecidedBy).Kind() != wantKinds[name] {
				t.Fatalf("decided by %#v, want a %s", d.DecidedBy, wantKinds[name])
			}
			data, err := wire.EncodeResponse(d.Response("parent", 1))
			if err != nil {
				t.Fatal(err)
			}
			hops := [][]byte{data}
			for _, session := range []string{"relay-1", "relay-2"} {
				hops = append(hops, relay(t, hops[len(hops)-1], session))
			}
			for i, resp := range hops {
				if err := seedResponse(resp); err != nil {
					t.Errorf("through %d relays: %v", i, err)
				}
				// What the child records: the answer nested under
				// forwarded (its review log's decidedBy).
				got, _, err := wire.DecodeResponse(resp)
				if err != nil {
					t.Fatal(err)
				}
				child, err := json.Marshal(decision.FromResponse(got).DecidedBy)
				if err != nil {
					t.Fatal(err)
				}
				if err := seedMember(child); err != nil {
					t.Errorf("the child's record through %d relays: %v", i, err)
				}
			}
		})
	}
}

// TestOlderCourierAnswerIsRelayedAsASeedMember: an older courier above
// answered with `via: "terminal"`; a relaying courier and the child read it
// (as a dialog, the compatibility of Decode) and write only the seed's
// literal onward.
func TestOlderCourierAnswerIsRelayedAsASeedMember(t *testing.T) {
	older := []byte(`{"approved":true,"state":"approved","responderSessionId":"parent","respondedAt":1,"decidedBy":{"kind":"user","via":"terminal"}}`)
	if seedResponse(older) == nil {
		t.Fatal("the strict reader takes via terminal")
	}
	relayed := relay(t, older, "relay-1")
	if err := seedResponse(relayed); err != nil {
		t.Fatalf("relayed: %v", err)
	}
	resp, _, err := wire.DecodeResponse(relayed)
	if err != nil {
		t.Fatal(err)
	}
	child, err := json.Marshal(decision.FromResponse(resp).DecidedBy)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"kind":"forwarded","responderSessionId":"relay-1","decision":{"kind":"forwarded","responderSessionId":"parent","decision":{"kind":"user","via":"dialog"}}}`
	if string(child) != want {
		t.Errorf("the child records %s, want %s", child, want)
	}
}
