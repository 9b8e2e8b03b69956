package prompt

import (
	"fmt"
	"strings"
	"testing"

	"github.com/seed6639df8c/courier/decision"
	"github.com/seed6639df8c/courier/provenance"
)

// D denies the ask on screen and everything waiting from its session, in
// one key and a confirmation; each is a user's denial that says why.
func TestDenyAllFromSession(t *testing.T) {
	m := &machine{}
	var flood []*entry
	for i := range 5 {
		e := newEntry(askFrom("child-flood", "flood", fmt.Sprintf("curl x/%d", i)))
		flood = append(flood, e)
		m.push(e, t0)
	}
	legit := newEntry(askFrom("child-legit", "reviewer", "make test"))
	m.push(legit, t0)

	if got := pressAll(m, t0, char('D')); len(got) != 0 || m.stage != stageDenyAll {
		t.Fatalf("D: %+v, stage %d", got, m.stage)
	}
	// One that arrives while the operator confirms is not denied.
	late := newEntry(askFrom("child-flood", "flood", "curl x/late"))
	m.push(late, t0)
	text := frameText(m.frame(100, 30, "parent", t0))
	for _, want := range []string{"Deny this ask and the 4 others waiting from session child-flood (5 in all)?",
		"Each is told: \"" + reasonDenyAll + "\"", "y denies them all · n or esc goes back"} {
		if !strings.Contains(text, want) {
			t.Errorf("confirmation lacks %q:\n%s", want, text)
		}
	}
	// Any other key asks again; it denies nothing.
	if got := pressAll(m, t0, enter, char('s'), char('2')); len(got) != 0 || m.stage != stageDenyAll {
		t.Fatalf("stray keys in the confirmation: %+v, stage %d", got, m.stage)
	}

	answers := m.press(char('y'), t0)
	if len(answers) != 5 {
		t.Fatalf("y denied %d asks, want 5", len(answers))
	}
	denied := map[*entry]bool{}
	for _, a := range answers {
		denied[a.e] = true
		if a.d.State != decision.StateDeniedWithReason || a.d.DenialReason != reasonDenyAll || a.d.DecidedBy != (provenance.User{Via: provenance.ViaDialog}) {
			t.Errorf("denied as %+v", a.d)
		}
		if a.e.queued {
			t.Errorf("a denied ask is still queued")
		}
	}
	for _, e := range flood {
		if !denied[e] {
			t.Errorf("%s was not denied", e.view.summary)
		}
	}
	if m.head() != legit || !strings.Contains(m.notice, "denied 5 asks from session child-flood") {
		t.Errorf("after the deny-all: %q on screen, notice %q", m.head().view.summary, m.notice)
	}
	if m.waiting() != 1 || m.tally.you != 5 {
		t.Errorf("waiting %d answered %d, want the late one and 5", m.waiting(), m.tally.you)
	}
	pressAll(m, t0, char('y'))
	if m.head() != late {
		t.Errorf("the ask that arrived during the confirmation is not next")
	}
}

func TestDenyAllCancelled(t *testing.T) {
	for _, k := range []key{esc, char('n'), char('N')} {
		m := &machine{}
		m.push(newEntry(askFrom("child-a", "a", "one")), t0)
		m.push(newEntry(askFrom("child-a", "a", "two")), t0)
		if got := pressAll(m, t0, char('D'), k); len(got) != 0 || m.stage != stageChoose || m.waiting() != 1 {
			t.Errorf("D then %v: answers %+v, stage %d, waiting %d", k, got, m.stage, m.waiting())
		}
		if !strings.Contains(m.notice, "nothing was denied") {
			t.Errorf("notice %q", m.notice)
		}
	}
	// A lower-case d is no answer: the deny-all needs the shifted key.
	m := &machine{}
	m.push(newEntry(askFrom("child-a", "a", "one")), t0)
	if pressAll(m, t0, char('d')); m.stage != stageChoose {
		t.Errorf("d opened stage %d", m.stage)
	}
}

// Through the prompt: D, then y, answers every held ask of the session,
// each once, and the other session's ask is shown.
func TestPromptDenyAll(t *testing.T) {
	checkNoLeak(t)
	tty := newFakeTTY(100, 30)
	p := start(tty, Options{Session: "parent", ArmDelay: -1})
	defer p.Close()
	var held []*heldAsk
	for i := range 4 {
		h := newHeldAsk()
		a := askFrom("child-flood", "flood", fmt.Sprintf("curl x/%d", i))
		p.Hold(&a, h.done)
		held = append(held, h)
	}
	other := newHeldAsk()
	o := askFrom("child-legit", "reviewer", "make test")
	p.Hold(&o, other.done)
	tty.waitScreen(t, "4 more waiting, from 2 sessions")
	tty.press(t, "D")
	tty.waitScreen(t, "Deny this ask and the 3 others waiting from session child-flood (4 in all)?")
	tty.press(t, "y")
	for _, h := range held {
		if d := h.fate(t); d.State != decision.StateDeniedWithReason || d.DenialReason != reasonDenyAll {
			t.Errorf("held: %+v", d)
		}
	}
	tty.waitScreen(t, "make test")
	tty.waitScreen(t, "denied 4 asks from session child-flood")
	tty.press(t, "y")
	if d := other.fate(t); !d.Approved() {
		t.Errorf("the other session's ask: %+v", d)
	}
}
