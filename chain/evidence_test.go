package chain

import (
	"os"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/seed6639df8c/courier/authorizer"
	"github.com/seed6639df8c/courier/decision"
	"github.com/seed6639df8c/courier/reviewlog/reviewlogtest"
	"github.com/seed6639df8c/courier/wire"
)

const intentMarker = "marker-INTENT-c41d"

// countingIntent is a conversation provider that counts its calls.
func countingIntent(calls *atomic.Int32) func() *authorizer.Conversation {
	return func() *authorizer.Conversation {
		calls.Add(1)
		return &authorizer.Conversation{Items: []authorizer.ConversationItem{
			{Role: "user", Text: "force-push the release " + intentMarker},
			{Role: "assistant", Text: "compacted " + intentMarker, Derived: true},
		}}
	}
}

// The conversation reaches only the links that disclose it, enforcing or
// shadow, from one snapshot per ask, labelled forwarded with the
// requester's agent; no review-log line carries any of its text.
func TestConversationOnlyToDisclosingLinks(t *testing.T) {
	log, path := reviewlogtest.Open(t)
	plain := &fakeLink{name: "plain"}
	judge := &fakeLink{name: "judge"}
	shadow := &fakeLink{name: "shadow", verdict: authorizer.Verdict{Kind: authorizer.Deny, Reason: "would deny"}}
	var calls atomic.Int32
	c := New(log, []Member{
		{Link: plain, Disclose: authorizer.Disclosure{Cwd: true, Principal: true}},
		{Link: judge, Disclose: authorizer.Disclosure{Conversation: true}},
		{Link: shadow, Mode: Shadow, Disclose: authorizer.Disclosure{Conversation: true}},
	}, WithConversation(countingIntent(&calls)))
	if d, ok := c.Resolve(t.Context(), bashAsk("git push --force")); ok {
		t.Fatalf("deferring links decided %+v", d)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if n := calls.Load(); n != 1 {
		t.Errorf("provider called %d times for one ask, want 1", n)
	}
	if got := plain.calls[0].Conversation; got != nil {
		t.Errorf("a link without the disclosure got %+v", got)
	}
	for _, l := range []*fakeLink{judge, shadow} {
		got := l.calls[0].Conversation
		if got == nil || !got.Forwarded || got.RequesterAgent != "Explore" || len(got.Items) != 2 || !got.Items[1].Derived {
			t.Errorf("%s got conversation %+v", l.name, got)
		}
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(data), "INTENT") || strings.Contains(string(data), "force-push the release") {
		t.Errorf("the review log carries conversation text:\n%s", data)
	}
}

// No link discloses the conversation: the transcript is never read.
func TestConversationNotReadWithoutDisclosure(t *testing.T) {
	log, _ := reviewlogtest.Open(t)
	var calls atomic.Int32
	c := New(log, []Member{{Link: &fakeLink{name: "a"}}}, WithConversation(countingIntent(&calls)))
	defer c.Close()
	c.Resolve(t.Context(), bashAsk("ls"))
	if n := calls.Load(); n != 0 {
		t.Errorf("provider called %d times, want 0", n)
	}
}

// A link's code, reason and metadata land in its review entry, cleaned
// and bounded; hostile ones (terminal escapes, a 10 KB model name,
// negative counts, a code with spaces) are repaired or dropped. A defer's
// reason is logged, never given to the child; a deny's is.
func TestLinkNotesInTheReviewLog(t *testing.T) {
	huge := "\x1b[31mgpt\u202e-evil" + strings.Repeat("m", 10<<10)
	for _, tc := range []struct {
		name    string
		verdict authorizer.Verdict
		req     wire.Request
		want    map[string]any
		absent  []string
	}{
		{"defer with code", authorizer.Verdict{Kind: authorizer.Defer, Code: "missing_cwd", Reason: "cwd needed for ./build",
			Meta: authorizer.Meta{Model: "claude-x", PromptVersion: "judge-v1", InputTokens: 812, OutputTokens: 40, LatencyMs: 930}},
			bashAsk("rm -rf ./build"),
			map[string]any{"verdict": "defer", "code": "missing_cwd", "reason": "cwd needed for ./build", "model": "claude-x",
				"promptVersion": "judge-v1", "inputTok": 812.0, "outputTok": 40.0, "modelLatencyMs": 930.0}, nil},
		{"hostile", authorizer.Verdict{Kind: authorizer.Deny, Code: "force push", Reason: "no\x1b[2J",
			Meta: authorizer.Meta{Model: huge, PromptVersion: "v\n2", InputTokens: -5, OutputTokens: -1, LatencyMs: -7}},
			bashAsk("git push --force"),
			map[string]any{"verdict": "deny", "reason": "no [2J", "promptVersion": "v 2"},
			[]string{"code", "inputTok", "outputTok", "modelLatencyMs"}},
		{"capped allow keeps its notes", authorizer.Verdict{Kind: authorizer.Allow, Code: "authorized", Reason: "dropped",
			Meta: authorizer.Meta{Model: "m"}},
			func() wire.Request { r := bashAsk("/etc/x"); r.AccessIntent.Surface = "path_write"; return r }(),
			map[string]any{"verdict": "defer", "capped": true, "code": "authorized", "reason": nil, "model": "m"}, nil},
		{"old link: no notes", authorizer.Verdict{Kind: authorizer.Defer}, bashAsk("ls"),
			map[string]any{"verdict": "defer", "reason": nil},
			[]string{"code", "model", "promptVersion", "inputTok", "outputTok", "modelLatencyMs"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			log, path := reviewlogtest.Open(t)
			c := New(log, []Member{{Link: &fakeLink{name: "judge", verdict: tc.verdict}}})
			defer c.Close()
			d, decided := c.Resolve(t.Context(), tc.req)
			if tc.verdict.Kind == authorizer.Deny && (!decided || d.State != decision.StateDeniedWithReason || d.DenialReason != "no [2J") {
				t.Errorf("deny decision %+v %v", d, decided)
			}
			if tc.verdict.Kind != authorizer.Deny && decided {
				t.Errorf("decided %+v", d)
			}
			var e map[string]any
			for _, m := range readLog(t, path) {
				if m["event"] == "authorizer_link.verdict" {
					e = m
				}
			}
			for k, v := range tc.want {
				if e[k] != v {
					t.Errorf("%s = %#v, want %#v (entry %v)", k, e[k], v, e)
				}
			}
			for _, k := range tc.absent {
				if _, has := e[k]; has {
					t.Errorf("%s present: %v", k, e)
				}
			}
			if tc.name == "hostile" {
				model, _ := e["model"].(string)
				if len(model) > authorizer.MaxMetaBytes || strings.ContainsAny(model, "\x1b\u202e") || !strings.HasPrefix(model, "[31mgpt -evilm") {
					t.Errorf("model logged as %q", model)
				}
			}
		})
	}
}

// A provider that panics costs the links their conversation, nothing more:
// not the broker (a shadow link's goroutine may be the first to call it),
// not the ask.
func TestConversationProviderPanic(t *testing.T) {
	log, _ := reviewlogtest.Open(t)
	shadow := &fakeLink{name: "shadow"}
	judge := &fakeLink{name: "judge", verdict: authorizer.Verdict{Kind: authorizer.Deny, Reason: "no"}}
	disclose := authorizer.Disclosure{Conversation: true}
	c := New(log, []Member{{Link: shadow, Mode: Shadow, Disclose: disclose}, {Link: judge, Disclose: disclose}},
		WithConversation(func() *authorizer.Conversation { panic("transcript reader bug") }))
	d, ok := c.Resolve(t.Context(), bashAsk("ls"))
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if !ok || d.State != decision.StateDeniedWithReason {
		t.Fatalf("decision %+v %v", d, ok)
	}
	if judge.calls[0].Conversation != nil || shadow.calls[0].Conversation != nil {
		t.Error("a conversation reached a link from a provider that panicked")
	}
}
