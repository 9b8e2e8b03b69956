package plugins

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/seed6639df8c/courier/authorizer"
	"github.com/seed6639df8c/courier/reviewlog"
	"github.com/seed6639df8c/courier/rules"
	"github.com/seed6639df8c/courier/wire"
)

// A plugin's code, reason and metadata reach the review log through the
// real gRPC path, cleaned: the hostile ones (terminal escapes, invalid
// UTF-8, a 10 KB model name, negative counts, a code with a space) are
// repaired or dropped, and a deferring link's reason is logged.
func TestLinkNotesThroughGRPC(t *testing.T) {
	h := load(t, Options{}, spec("t"))
	if len(h.errs) > 0 {
		t.Fatal(h.errs)
	}
	for _, v := range []string{"notes", "hostile-notes"} {
		if d, ok := h.ask(v); ok {
			t.Fatalf("%s: a deferring link decided %+v", v, d)
		}
	}
	e := h.entries(reviewlog.LinkVerdict)
	if len(e) != 2 {
		t.Fatalf("%d link entries: %v", len(e), e)
	}
	for k, want := range map[string]any{
		"verdict": "defer", "code": "missing_cwd", "reason": "the command has relative paths", "model": "claude-x",
		"promptVersion": "judge-v1", "inputTok": 812.0, "outputTok": 40.0, "modelLatencyMs": 930.0,
	} {
		if e[0][k] != want {
			t.Errorf("notes: %s = %#v, want %#v", k, e[0][k], want)
		}
	}
	hostile := e[1]
	for _, k := range []string{"code", "inputTok", "outputTok", "modelLatencyMs"} {
		if _, has := hostile[k]; has {
			t.Errorf("hostile-notes: %s logged: %v", k, hostile)
		}
	}
	if hostile["reason"] != "[2Jwhy\uFFFD" || hostile["promptVersion"] != "v1" {
		t.Errorf("hostile-notes: reason %q, promptVersion %q", hostile["reason"], hostile["promptVersion"])
	}
	if m, _ := hostile["model"].(string); len(m) > authorizer.MaxMetaBytes || strings.ContainsAny(m, "\x1b") || !strings.HasPrefix(m, "[31mMMM") {
		t.Errorf("hostile-notes: model logged as %q", m)
	}
}

// The complete bash input, the units that asked and, where disclosed, the
// serving session's conversation reach a plugin through plugins.Load's
// wiring and the gRPC protocol.
func TestBashAndConversationReachThePlugin(t *testing.T) {
	const marker = "marker-INTENT-99e1"
	conv := func() *authorizer.Conversation {
		return &authorizer.Conversation{Items: []authorizer.ConversationItem{{Role: "user", Text: "push it " + marker}}}
	}
	line := "npm test && git push #judged"
	for _, disclosed := range []bool{true, false} {
		link := spec("judge")
		link.DiscloseConversation = disclosed
		seen, logged := judgedBy(t, link, conv, line)
		if b := seen.Bash; b == nil || b.Complete != line || strings.Join(b.Triggering, "|") != "npm test|git push #judged" {
			t.Errorf("disclosed %v: Bash = %+v", disclosed, seen.Bash)
		}
		cv := seen.Conversation
		if !disclosed {
			if cv != nil || strings.Contains(logged, marker) {
				t.Errorf("a link without the disclosure saw %+v", cv)
			}
			continue
		}
		if cv == nil || !cv.Forwarded || cv.RequesterAgent != "Explore" || len(cv.Items) != 1 || !strings.Contains(cv.Items[0].Text, marker) {
			t.Errorf("Conversation = %+v", cv)
		}
	}
}

// seenEvidence is what testauthz reports it saw of an ask ending #judged.
type seenEvidence struct {
	Bash         *authorizer.BashInput
	Conversation *authorizer.Conversation
}

// judgedBy loads link with the conversation provider conv through Load,
// asks it a courier-shaped bash ask of line, and returns what testauthz
// says it saw, and the review log.
func judgedBy(t *testing.T, link rules.AuthorizerLink, conv func() *authorizer.Conversation, line string) (seen seenEvidence, logged string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "review.jsonl")
	log, err := reviewlog.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	c, problems := Load(t.Context(), []rules.AuthorizerLink{link}, log, Options{Confinement: testPlan, Conversation: conv})
	if len(problems) > 0 {
		t.Fatal(problems)
	}
	defer c.Close()
	req := request("bash", line)
	req.AccessIntent.AskingUnits = []wire.AskingUnit{{Command: "npm test"}, {Command: "git push #judged"}}
	d, ok := c.Resolve(t.Context(), req)
	if !ok {
		t.Fatal("the link did not answer")
	}
	if err := json.Unmarshal([]byte(d.DenialReason), &seen); err != nil {
		t.Fatalf("reason %q: %v", d.DenialReason, err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return seen, string(data)
}
