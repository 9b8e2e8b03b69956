package prompt

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/seed6639df8c/courier/decision"
	"github.com/seed6639df8c/courier/provenance"
	"github.com/seed6639df8c/courier/serve"
	"github.com/seed6639df8c/courier/wire"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// testAsk is a forwarded bash ask; grants adds the child's session-grant
// suggestion (which opens the scope choice).
func testAsk(agent, value string, grants bool) serve.Ask {
	req := wire.Request{
		ID: "perm-" + agent, RequesterAgentName: agent, RequesterSessionID: "child-" + agent,
		TargetSessionID: "parent", Surface: "bash", Value: value,
		AccessIntent: &wire.AccessIntent{
			Surface: "bash", MatchValues: []string{value}, RequesterCwd: "/w",
			Principal: wire.Principal{SessionID: "child-" + agent, AgentName: agent},
		},
	}
	ask := serve.Ask{Request: req}
	if grants {
		// The broker admits the child's suggestion as it is.
		gs := []wire.SuggestedGrant{{Surface: "bash", Pattern: strings.Fields(value)[0] + " *"}}
		req.SessionApproval = &wire.SessionApproval{Grants: gs}
		ask = serve.Ask{Request: req, Grants: slices.Clone(gs)}
	}
	return ask
}

// pressAll applies keys at time t, drawing a frame after each as the
// prompt's loop does when keys come one at a time, and returns the
// answers they gave.
func pressAll(m *machine, at time.Time, keys ...key) []decision.Decision {
	var got []decision.Decision
	for _, k := range keys {
		for _, a := range m.press(k, at) {
			got = append(got, a.d)
		}
		m.frame(120, 40, "parent", at)
	}
	return got
}

// pressUnseen applies keys at time t with no frame between them, as keys
// typed ahead in one read reach the machine.
func pressUnseen(m *machine, at time.Time, keys ...key) []decision.Decision {
	var got []decision.Decision
	for _, k := range keys {
		for _, a := range m.press(k, at) {
			got = append(got, a.d)
		}
	}
	return got
}

func runes(s string) []key {
	var ks []key
	for _, r := range s {
		ks = append(ks, char(r))
	}
	return ks
}

var (
	enter  = key{Code: keyEnter}
	esc    = key{Code: keyEsc}
	up     = key{Code: keyUp}
	down   = key{Code: keyDown}
	bs     = key{Code: keyBackspace}
	kill   = key{Code: keyKillLine}
	pgUp   = key{Code: keyPageUp}
	pgDown = key{Code: keyPageDown}
)

func TestKeysToDecisions(t *testing.T) {
	tests := []struct {
		name   string
		grants bool
		keys   []key
		state  decision.State
		reason string
	}{
		{"y approves once", true, runes("y"), decision.StateApproved, ""},
		{"Y works too", true, runes("Y"), decision.StateApproved, ""},
		{"enter picks the first option", true, []key{enter}, decision.StateApproved, ""},
		{"n denies", true, runes("n"), decision.StateDenied, ""},
		{"down down enter denies", true, []key{down, down, enter}, decision.StateDenied, ""},
		{"up wraps to the reason", true, []key{up, enter, char('x'), enter}, decision.StateDeniedWithReason, "x"},
		{"s then enter: this subagent only, the default", true, []key{char('s'), enter}, decision.StateApprovedForSession, ""},
		{"s then esc: this subagent only", true, []key{char('s'), esc}, decision.StateApprovedForSession, ""},
		{"s then 1: this subagent only", true, runes("s1"), decision.StateApprovedForSession, ""},
		{"s then 2: the whole session", true, runes("s2"), decision.StateApprovedForServingSession, ""},
		{"s then down enter: the whole session", true, []key{char('s'), down, enter}, decision.StateApprovedForServingSession, ""},
		{"s then down up enter: back to this subagent", true, []key{char('s'), down, up, enter}, decision.StateApprovedForSession, ""},
		{"down enter opens the scope", true, []key{down, enter, char('2')}, decision.StateApprovedForServingSession, ""},
		{"s without grants: no scope choice", false, runes("s"), decision.StateApprovedForSession, ""},
		{"r then a reason", true, append(append(runes("r"), runes("Use pnpm instead")...), enter), decision.StateDeniedWithReason, "Use pnpm instead"},
		{"the reason is trimmed", true, append(append(runes("r"), runes("  why  ")...), enter), decision.StateDeniedWithReason, "why"},
		{"answer keys typed into the reason are text", true, append(runes("rysn"), enter), decision.StateDeniedWithReason, "ysn"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := &machine{}
			m.push(newEntry(testAsk("reviewer", "git push", tt.grants)), t0)
			got := pressAll(m, t0, tt.keys...)
			if len(got) != 1 {
				t.Fatalf("got %d answers, want 1: %+v", len(got), got)
			}
			d := got[0]
			if d.State != tt.state || d.DenialReason != tt.reason {
				t.Errorf("got %s %q, want %s %q", d.State, d.DenialReason, tt.state, tt.reason)
			}
			if (d.State == decision.StateApprovedForSession) != (d.SessionGrantWidth == wire.GrantProven) {
				t.Errorf("sessionGrantWidth = %q for %s", d.SessionGrantWidth, d.State)
			}
			if d.DecidedBy != (provenance.User{Via: provenance.ViaDialog}) {
				t.Errorf("decidedBy = %#v, want the prompt's Decider (user via dialog)", d.DecidedBy)
			}
			if m.head() != nil {
				t.Errorf("the answered ask is still on screen")
			}
		})
	}
}

func TestKeysThatDecideNothing(t *testing.T) {
	m := &machine{}
	m.push(newEntry(testAsk("reviewer", "git push", true)), t0)
	// Esc on the first choice, unknown keys, backspace: no answer, and
	// the notice tells the operator what to do.
	if got := pressAll(m, t0, esc); len(got) != 0 {
		t.Fatalf("esc answered: %+v", got)
	}
	if !strings.Contains(m.notice, "choose an answer") {
		t.Errorf("notice after esc = %q", m.notice)
	}
	if got := pressAll(m, t0, char('x'), char('q'), bs, kill, char('3')); len(got) != 0 {
		t.Fatalf("stray keys answered: %+v", got)
	}
	if m.notice != "" {
		t.Errorf("a key press should clear the notice, got %q", m.notice)
	}
	// In the scope choice, only 1, 2, e, arrows, enter and esc count.
	if got := pressAll(m, t0, char('s'), char('y'), char('n'), char('s')); len(got) != 0 || m.stage != stageScope {
		t.Fatalf("stray keys in the scope choice: %+v, stage %d", got, m.stage)
	}
}

func TestReasonIsRequired(t *testing.T) {
	m := &machine{}
	m.push(newEntry(testAsk("reviewer", "npm install", true)), t0)
	if got := pressAll(m, t0, char('r'), enter); len(got) != 0 {
		t.Fatalf("an empty reason denied: %+v", got)
	}
	if !strings.Contains(m.notice, "a reason is required") {
		t.Errorf("notice = %q, want a reason is required", m.notice)
	}
	if got := pressAll(m, t0, char(' '), char(' '), enter); len(got) != 0 {
		t.Fatalf("a blank reason denied: %+v", got)
	}
	// Esc goes back to the first choice with nothing decided; the cursor
	// is on the reason option.
	pressAll(m, t0, esc)
	if m.stage != stageChoose || m.cursor != optReason {
		t.Fatalf("after esc: stage %d cursor %d", m.stage, m.cursor)
	}
	got := pressAll(m, t0, char('n'))
	if len(got) != 1 || got[0].State != decision.StateDenied {
		t.Fatalf("n after esc: %+v", got)
	}
}

func TestReasonEditing(t *testing.T) {
	m := &machine{}
	m.push(newEntry(testAsk("reviewer", "npm install", true)), t0)
	keys := append(runes("rabc"), bs, bs, char('x'), kill)
	keys = append(keys, runes("use\u202e pnpm\x1b")...) // a format character and a control are dropped
	keys = append(keys, bs, bs, bs, bs, char('p'), char('n'), char('p'), char('m'), char('é'), enter)
	got := pressAll(m, t0, keys...)
	if len(got) != 1 || got[0].DenialReason != "use pnpmé" {
		t.Fatalf("got %+v, want the reason \"use pnpmé\"", got)
	}

	m.push(newEntry(testAsk("reviewer", "npm install", true)), t0)
	pressAll(m, t0, char('r'))
	pressAll(m, t0, runes(strings.Repeat("a", maxReason+50))...)
	if len(m.reason) != maxReason {
		t.Errorf("reason length = %d, want the cap %d", len(m.reason), maxReason)
	}
}

func TestQueueOrder(t *testing.T) {
	m := &machine{}
	a, b, c := newEntry(testAsk("a", "one", true)), newEntry(testAsk("b", "two", true)), newEntry(testAsk("c", "three", true))
	for _, e := range []*entry{a, b, c} {
		m.push(e, t0)
	}
	if m.head() != a || m.waiting() != 2 {
		t.Fatalf("head %v, waiting %d; want a and 2", m.head().view.agent, m.waiting())
	}
	// An unfinished answer on the first ask does not leak into the next.
	pressAll(m, t0, char('r'), char('z'))
	for i, want := range []*entry{a, b, c} {
		if m.head() != want {
			t.Fatalf("answer %d: head is %q, want %q", i, m.head().view.agent, want.view.agent)
		}
		if m.stage != stageChoose && i > 0 {
			t.Fatalf("ask %d starts in stage %d", i, m.stage)
		}
		got := m.press(char('n'), t0)
		if i == 0 {
			// Still typing a reason: n is text.
			if len(got) != 0 {
				t.Fatalf("n answered while typing a reason")
			}
			got = m.press(enter, t0)
		}
		if len(got) != 1 || got[0].e != want {
			t.Fatalf("answer %d went to %v", i, got)
		}
	}
	if m.head() != nil || m.waiting() != 0 || m.tally.you != 3 {
		t.Errorf("after three answers: head %v waiting %d answered %d", m.head(), m.waiting(), m.tally.you)
	}
	if got := m.press(char('y'), t0); len(got) != 0 {
		t.Errorf("a key with nothing on screen answered something")
	}
}

func TestWithdraw(t *testing.T) {
	m := &machine{}
	a, b, c := newEntry(testAsk("a", "one", true)), newEntry(testAsk("b", "two", true)), newEntry(testAsk("c", "three", true))
	for _, e := range []*entry{a, b, c} {
		m.push(e, t0)
	}
	pressAll(m, t0, char('s')) // a is in the scope choice

	// Withdrawing one that waits leaves the screen alone.
	if !m.withdraw(b, "the requester gave up", t0) {
		t.Fatal("b was not queued")
	}
	if m.head() != a || m.stage != stageScope || m.waiting() != 1 || m.notice != "" {
		t.Fatalf("after withdrawing b: head %q stage %d waiting %d notice %q", m.head().view.agent, m.stage, m.waiting(), m.notice)
	}
	// Withdrawing the one on screen shows the next, from its start, and
	// tells the operator why the other left.
	if !m.withdraw(a, "prompt timeout", t0) {
		t.Fatal("a was not queued")
	}
	if m.head() != c || m.stage != stageChoose || m.cursor != 0 {
		t.Fatalf("after withdrawing a: head %v stage %d cursor %d", m.head(), m.stage, m.cursor)
	}
	if !strings.Contains(m.notice, "'a' one") || !strings.Contains(m.notice, "prompt timeout") {
		t.Errorf("notice = %q, want the ask and the reason", m.notice)
	}
	if m.withdraw(a, "again", t0) {
		t.Error("withdrew a twice")
	}
	// The key meant for a's scope choice ("2", the whole session) must not
	// reach c.
	if got := pressAll(m, t0, char('2')); len(got) != 0 {
		t.Fatalf("a scope key answered the next ask: %+v", got)
	}
	m.withdraw(c, "the session ended", t0)
	if m.head() != nil || !strings.Contains(m.notice, "the session ended") {
		t.Errorf("after the last: head %v notice %q", m.head(), m.notice)
	}
}

func TestArmDelay(t *testing.T) {
	m := &machine{armDelay: 300 * time.Millisecond}
	a, b := newEntry(testAsk("a", "one", true)), newEntry(testAsk("b", "two", true))
	m.push(a, t0)
	m.push(b, t0.Add(time.Second)) // b's arrival does not re-arm a

	if got := pressAll(m, t0.Add(100*time.Millisecond), char('y')); len(got) != 0 {
		t.Fatalf("a key within the arm delay answered: %+v", got)
	}
	if !strings.Contains(m.notice, "ignored") {
		t.Errorf("notice = %q, want the key reported as ignored", m.notice)
	}
	at := t0.Add(2 * time.Second)
	if got := pressAll(m, at, char('y')); len(got) != 1 {
		t.Fatalf("an armed y did not answer")
	}
	// The double press that follows hits b as it appears: ignored.
	if got := pressAll(m, at.Add(50*time.Millisecond), char('y')); len(got) != 0 {
		t.Fatalf("a double press answered the next ask: %+v", got)
	}
	if got := pressAll(m, at.Add(300*time.Millisecond), char('n')); len(got) != 1 || got[0].State != decision.StateDenied {
		t.Fatalf("an armed n on b: %+v", got)
	}
}
