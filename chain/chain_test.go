package chain

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/seed6639df8c/courier/authorizer"
	"github.com/seed6639df8c/courier/decision"
	"github.com/seed6639df8c/courier/provenance"
	"github.com/seed6639df8c/courier/reviewlog"
	"github.com/seed6639df8c/courier/reviewlog/reviewlogtest"
	"github.com/seed6639df8c/courier/wire"
)

// fakeLink answers with a fixed verdict or error and records its calls.
type fakeLink struct {
	name    string
	verdict authorizer.Verdict
	err     error
	// block, when set, is waited on (or ctx) before answering.
	block chan struct{}
	// onCall runs at the start of each call.
	onCall func(ev authorizer.Evidence)

	mu     sync.Mutex
	calls  []authorizer.Evidence
	closed bool
}

func (f *fakeLink) Name() string { return f.name }

func (f *fakeLink) Authorize(ctx context.Context, ev authorizer.Evidence) (authorizer.Verdict, error) {
	f.mu.Lock()
	f.calls = append(f.calls, ev)
	f.mu.Unlock()
	if f.onCall != nil {
		f.onCall(ev)
	}
	if f.block != nil {
		select {
		case <-f.block:
		case <-ctx.Done():
			select {
			case <-f.block:
				// Released too: select picked at random between two
				// ready cases; the release came first.
			default:
				return authorizer.Verdict{}, ctx.Err()
			}
		}
	}
	return f.verdict, f.err
}

func (f *fakeLink) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.closed = true
	return nil
}

func (f *fakeLink) called() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.calls)
}

func readLog(t *testing.T, path string) []map[string]any {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []map[string]any
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatal(err)
		}
		out = append(out, m)
	}
	return out
}

func bashAsk(value string) wire.Request {
	return wire.Request{
		ID: "r1", RequesterSessionID: "child", TargetSessionID: "parent", RequesterAgentName: "Explore",
		Surface: "bash", Value: value,
		AccessIntent: &wire.AccessIntent{Surface: "bash", MatchValues: []string{value}, RequesterCwd: "/w",
			Principal: wire.Principal{SessionID: "child", AgentName: "Explore"}},
	}
}

func TestNilAndEmptyChainResolveNothing(t *testing.T) {
	var c *Chain
	if _, ok := c.Resolve(t.Context(), bashAsk("ls")); ok {
		t.Error("nil chain decided")
	}
	if err := c.Close(); err != nil {
		t.Error(err)
	}
	log, path := reviewlogtest.Open(t)
	empty := New(log, nil)
	if _, ok := empty.Resolve(t.Context(), bashAsk("ls")); ok {
		t.Error("empty chain decided")
	}
	if n := len(readLog(t, path)); n != 0 {
		t.Errorf("an empty chain wrote %d review entries", n)
	}
}

func TestConfigOrderFirstDecisiveWins(t *testing.T) {
	log, path := reviewlogtest.Open(t)
	deferrer := &fakeLink{name: "a"}
	denier := &fakeLink{name: "b", verdict: authorizer.Verdict{Kind: authorizer.Deny, Reason: "  use pnpm  "}}
	allower := &fakeLink{name: "c", verdict: authorizer.Verdict{Kind: authorizer.Allow}}
	c := New(log, []Member{{Link: deferrer}, {Link: denier}, {Link: allower}})
	d, ok := c.Resolve(t.Context(), bashAsk("npm i"))
	if !ok || d.State != decision.StateDeniedWithReason || d.DenialReason != "use pnpm" {
		t.Fatalf("%+v %v", d, ok)
	}
	want := provenance.Authorizer{Name: "b", Verdict: provenance.VerdictDeny, Reason: provenance.Str("use pnpm")}
	if got, isAuth := d.DecidedBy.(provenance.Authorizer); !isAuth || got.Name != want.Name || *got.Reason != *want.Reason || got.Verdict != want.Verdict {
		t.Errorf("decidedBy %#v", d.DecidedBy)
	}
	if deferrer.called() != 1 || denier.called() != 1 || allower.called() != 0 {
		t.Errorf("calls %d %d %d, want 1 1 0", deferrer.called(), denier.called(), allower.called())
	}
	entries := readLog(t, path)
	var events []string
	for _, e := range entries {
		events = append(events, e["event"].(string))
	}
	if got := strings.Join(events, " "); got != "authorizer_chain_resolved authorizer_link.verdict authorizer_link.verdict" {
		t.Errorf("events %s", got)
	}
	if links := entries[0]["links"].([]any); len(links) != 3 || links[0] != "a" || links[2] != "c" || entries[0]["requestId"] != "r1" {
		t.Errorf("chain_resolved %v", entries[0])
	}
	if e := entries[1]; e["name"] != "a" || e["verdict"] != "defer" || e["reason"] != nil || e["latencyMs"] == nil {
		t.Errorf("first verdict entry %v", e)
	}
	if e := entries[2]; e["name"] != "b" || e["verdict"] != "deny" || e["reason"] != "use pnpm" {
		t.Errorf("second verdict entry %v", e)
	}
}

func TestChainResolvedIsWrittenBeforeAnyLinkRuns(t *testing.T) {
	log, path := reviewlogtest.Open(t)
	var sawResolved bool
	link := &fakeLink{name: "a", onCall: func(authorizer.Evidence) {
		for _, e := range readLog(t, path) {
			sawResolved = sawResolved || e["event"] == reviewlog.ChainResolved
		}
	}}
	New(log, []Member{{Link: link}}).Resolve(t.Context(), bashAsk("ls"))
	if !sawResolved {
		t.Error("the link ran before authorizer_chain_resolved was written")
	}
}

func TestAllowIsOneOffAndDenyWithoutReason(t *testing.T) {
	c := New(nil, []Member{{Link: &fakeLink{name: "ok", verdict: authorizer.Verdict{Kind: authorizer.Allow, Reason: "ignored"}}}})
	d, ok := c.Resolve(t.Context(), bashAsk("ls"))
	if !ok || d.State != decision.StateApproved || d.DenialReason != "" {
		t.Fatalf("%+v", d)
	}
	if d.DecidedBy != (provenance.Authorizer{Name: "ok", Verdict: provenance.VerdictAllow}) {
		t.Errorf("decidedBy %#v", d.DecidedBy)
	}
	c = New(nil, []Member{{Link: &fakeLink{name: "no", verdict: authorizer.Verdict{Kind: authorizer.Deny, Reason: " \n\t "}}}})
	d, ok = c.Resolve(t.Context(), bashAsk("ls"))
	if !ok || d.State != decision.StateDenied || d.DenialReason != "" {
		t.Fatalf("%+v", d)
	}
	if a := d.DecidedBy.(provenance.Authorizer); a.Reason != nil {
		t.Errorf("empty reason kept: %q", *a.Reason)
	}
}

func TestEnvelopeInTheChainCapsAndPassesOn(t *testing.T) {
	log, path := reviewlogtest.Open(t)
	allower := &fakeLink{name: "allow-all", verdict: authorizer.Verdict{Kind: authorizer.Allow}}
	next := &fakeLink{name: "next"}
	c := New(log, []Member{{Link: allower}, {Link: next}})
	req := bashAsk("/etc/passwd")
	req.AccessIntent.Surface = "path_read"
	if d, ok := c.Resolve(t.Context(), req); ok {
		t.Fatalf("allow on path_read decided: %+v", d)
	}
	if next.called() != 1 {
		t.Error("a capped allow did not pass the ask on")
	}
	e := readLog(t, path)[1]
	if e["verdict"] != "defer" || e["capped"] != true || e["linkVerdict"] != "allow" {
		t.Errorf("entry %v", e)
	}
}

func TestFailurePolicyNeverAllows(t *testing.T) {
	boom := errors.New("boom")
	for _, tc := range []struct {
		name      string
		link      *fakeLink
		onFailure authorizer.VerdictKind
		decided   bool
	}{
		{"error deny", &fakeLink{name: "x", err: boom}, authorizer.Deny, true},
		{"error defer", &fakeLink{name: "x", err: boom}, authorizer.Defer, false},
		{"error with allow policy reads as deny", &fakeLink{name: "x", err: boom}, authorizer.Allow, true},
		{"allow with an error is a failure", &fakeLink{name: "x", verdict: authorizer.Verdict{Kind: authorizer.Allow}, err: ErrTimeout}, authorizer.Deny, true},
		{"invalid kind", &fakeLink{name: "x", verdict: authorizer.Verdict{Kind: 9}}, authorizer.Deny, true},
		{"invalid kind defer", &fakeLink{name: "x", verdict: authorizer.Verdict{Kind: 9}}, authorizer.Defer, false},
		{"timeout", &fakeLink{name: "x", err: ErrTimeout}, authorizer.Deny, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			log, path := reviewlogtest.Open(t)
			c := New(log, []Member{{Link: tc.link, OnFailure: tc.onFailure}})
			d, ok := c.Resolve(t.Context(), bashAsk("ls"))
			if ok != tc.decided || d.Approved() {
				t.Fatalf("%+v %v", d, ok)
			}
			if ok {
				ge, isGE := d.DecidedBy.(provenance.GateError)
				if !isGE || d.State != decision.StateDeniedWithReason || !strings.Contains(ge.Reason, `authorizer "x"`) || ge.Reason != d.DenialReason {
					t.Errorf("failure decision %+v", d)
				}
				if strings.Contains(d.DenialReason, "boom") {
					t.Errorf("the link's own error text reached the child: %q", d.DenialReason)
				}
			}
			e := readLog(t, path)[1]
			if e["failure"] == nil || e["error"] == nil {
				t.Errorf("entry %v", e)
			}
		})
	}
}

func TestFailureCauses(t *testing.T) {
	for err, want := range map[error]string{
		ErrDisabled: "is disabled", ErrTimeout: "timed out", ErrUnavailable: "is unavailable",
		authorizer.ErrInvalidVerdict: "gave an invalid answer", ErrClosed: "is shut down", errors.New("x"): "failed",
		context.Canceled: "failed",
	} {
		if got := failureCause(errors.Join(errors.New("wrapped"), err)); got != want {
			t.Errorf("%v: %q, want %q", err, got, want)
		}
	}
}

func TestShadowIsLoggedNeverEnforced(t *testing.T) {
	log, path := reviewlogtest.Open(t)
	release := make(chan struct{})
	shadowDeny := &fakeLink{name: "judge", verdict: authorizer.Verdict{Kind: authorizer.Deny, Reason: "would deny"}, block: release}
	shadowAllowPath := &fakeLink{name: "lenient", verdict: authorizer.Verdict{Kind: authorizer.Allow}}
	enforcing := &fakeLink{name: "real"}
	c := New(log, []Member{{Link: shadowDeny, Mode: Shadow}, {Link: enforcing}, {Link: shadowAllowPath, Mode: Shadow}})
	req := bashAsk("rm -rf build")
	req.AccessIntent.Surface = "path_write"
	// The shadow link is still blocked: Resolve must not wait for it.
	if d, ok := c.Resolve(t.Context(), req); ok {
		t.Fatalf("shadow verdict enforced: %+v", d)
	}
	close(release)
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	entries := readLog(t, path)
	if links := entries[0]["links"].([]any); len(links) != 1 || links[0] != "real" {
		t.Errorf("links %v", entries[0])
	}
	if sl := entries[0]["shadowLinks"].([]any); len(sl) != 2 {
		t.Errorf("shadowLinks %v", entries[0])
	}
	shadows := map[string]map[string]any{}
	for _, e := range entries {
		if e["event"] == reviewlog.LinkShadow {
			shadows[e["name"].(string)] = e
		}
	}
	if e := shadows["judge"]; e == nil || e["verdict"] != "deny" || e["reason"] != "would deny" {
		t.Errorf("judge shadow entry %v", e)
	}
	if e := shadows["lenient"]; e == nil || e["verdict"] != "defer" || e["capped"] != true {
		t.Errorf("lenient shadow entry %v (the envelope applies to what a shadow would do)", e)
	}
	if !shadowDeny.closed || !enforcing.closed {
		t.Error("Close did not close the links")
	}
}

// A shadow call still running at Close is cancelled, not waited for
// forever.
func TestCloseCancelsShadowCalls(t *testing.T) {
	stuck := &fakeLink{name: "stuck", block: make(chan struct{})}
	c := New(nil, []Member{{Link: stuck, Mode: Shadow}})
	c.Resolve(t.Context(), bashAsk("ls"))
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Errorf("second close: %v", err)
	}
	// After Close no shadow call starts.
	c.Resolve(t.Context(), bashAsk("ls"))
	if n := stuck.called(); n > 1 {
		t.Errorf("%d shadow calls after Close", n)
	}
}

func TestCancelledAskFailsIntoThePolicy(t *testing.T) {
	blocked := &fakeLink{name: "slow", block: make(chan struct{})}
	c := New(nil, []Member{{Link: blocked, OnFailure: authorizer.Deny}})
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	d, ok := c.Resolve(ctx, bashAsk("ls"))
	if !ok || d.Approved() {
		t.Fatalf("%+v %v", d, ok)
	}
}

func TestLinksSeeOnlyTheirDisclosure(t *testing.T) {
	plain := &fakeLink{name: "plain"}
	judge := &fakeLink{name: "judge"}
	c := New(nil, []Member{{Link: plain}, {Link: judge, Disclose: authorizer.Disclosure{Cwd: true}}})
	c.Resolve(t.Context(), bashAsk("ls"))
	if ev := plain.calls[0]; ev.RequesterCwd != nil || ev.Principal != nil {
		t.Errorf("plain link saw %+v", ev)
	}
	if ev := judge.calls[0]; ev.RequesterCwd == nil || *ev.RequesterCwd != "/w" || ev.Principal != nil {
		t.Errorf("judge saw %+v", ev)
	}
}
