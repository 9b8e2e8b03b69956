package prompt

import (
	"slices"
	"strings"
	"testing"

	"github.com/seed6639df8c/courier/decision"
	"github.com/seed6639df8c/courier/serve"
	"github.com/seed6639df8c/courier/wire"
)

// sixGrants is the attack's suggestion: four grants the prompt showed and
// two it hid behind "… and 2 more", which "the whole session" recorded.
var sixGrants = []wire.SuggestedGrant{
	{Surface: "bash", Pattern: "npm test *"},
	{Surface: "bash", Pattern: "npm run *"},
	{Surface: "bash", Pattern: "npm install *"},
	{Surface: "path_read", Pattern: "/w/*"},
	{Surface: "bash", Pattern: "*"},
	{Surface: "path_write", Pattern: "/*"},
}

// grantAsk is an ask for `npm test` whose admitted grants are grants.
func grantAsk(grants []wire.SuggestedGrant) serve.Ask {
	a := testAsk("reviewer", "npm test", false)
	a.Request.SessionApproval = &wire.SessionApproval{Grants: slices.Clone(grants)}
	a.Grants = slices.Clone(grants)
	return a
}

// shownIn reports whether a grant's whole text is on one line of the
// frames drawn, as a grant field line or a line of the scope choice's
// list.
func shownIn(frames []string, g wire.SuggestedGrant) bool {
	text := grantText(g)
	for _, f := range frames {
		for _, l := range strings.Split(f, "\n") {
			l = strings.TrimSpace(strings.TrimSuffix(l, "  (edited)"))
			if strings.HasSuffix(l, " "+text) && (strings.HasPrefix(l, "grant ") || strings.HasPrefix(l, "records ")) {
				return true
			}
		}
	}
	return false
}

// The attack, on a screen too short for every grant: the whole session
// cannot be chosen until the operator has paged through all of them, and
// every grant it records was on screen in full.
func TestHiddenGrantsNeverRecorded(t *testing.T) {
	const w, h = 100, 16
	m := &machine{}
	m.push(newEntry(grantAsk(sixGrants)), t0)
	var frames []string
	draw := func() string {
		text := frameText(m.frame(w, h, "parent", t0))
		frames = append(frames, text)
		return text
	}
	first := draw()
	if !strings.Contains(first, "s lists every one in full") {
		t.Errorf("the grant field does not say how to see every grant:\n%s", first)
	}
	pressUnseen(m, t0, char('s'))
	scope := draw()
	if !strings.Contains(scope, "of 6 shown") || !strings.Contains(scope, "pgdn shows the rest of the grants before 2") {
		t.Fatalf("the scope choice does not say the list scrolls:\n%s", scope)
	}
	for _, k := range []key{char('2'), enter} {
		if got := pressUnseen(m, t0, k); len(got) != 0 {
			t.Fatalf("%v chose the whole session before every grant was shown: %+v", k, got)
		}
		draw()
	}
	if !strings.Contains(m.notice, "page down (pgdn) to the last one first") {
		t.Errorf("notice = %q", m.notice)
	}
	for range 10 {
		pressUnseen(m, t0, pgDown)
		draw()
	}
	got := pressUnseen(m, t0, char('2'))
	if len(got) != 1 || got[0].State != decision.StateApprovedForServingSession {
		t.Fatalf("2 after paging through: %+v (notice %q)", got, m.notice)
	}
	// What the broker records is the list the operator paged through
	// (nil: the admitted grants, as they were shown).
	recorded := got[0].Grants
	if recorded == nil {
		recorded = sixGrants
	}
	for _, g := range recorded {
		if !shownIn(frames, g) {
			t.Errorf("%s was recorded without being shown in full", grantText(g))
		}
	}
}

// Keys typed ahead reach the machine with no frame between them: "s2"
// in one read cannot choose the whole session, whose list was never drawn.
func TestWholeSessionNeedsTheListDrawn(t *testing.T) {
	m := &machine{}
	m.push(newEntry(grantAsk(sixGrants[:1])), t0)
	if got := pressUnseen(m, t0, char('s'), char('2')); len(got) != 0 {
		t.Fatalf("s2 typed ahead answered: %+v", got)
	}
	m.frame(100, 30, "parent", t0)
	if got := pressUnseen(m, t0, char('2')); len(got) != 1 || got[0].State != decision.StateApprovedForServingSession {
		t.Fatalf("2 once the list was drawn: %+v", got)
	}
}

// A grant longer than a line is shown whole, wrapped, never cut.
func TestLongGrantShownWhole(t *testing.T) {
	long := wire.SuggestedGrant{Surface: "bash", Pattern: "npm test " + strings.Repeat("--flag-", 300) + "END *"}
	m := &machine{}
	m.push(newEntry(grantAsk([]wire.SuggestedGrant{long})), t0)
	pressAll(m, t0, char('s'))
	var shown strings.Builder
	for range 20 {
		for _, l := range m.frame(100, 30, "parent", t0) {
			if strings.HasPrefix(l.text, "        ") && !strings.Contains(l.text, " shown") {
				shown.WriteString(strings.TrimSpace(l.text))
			}
		}
		pressUnseen(m, t0, pgDown)
	}
	if !strings.Contains(shown.String(), "END *") || !strings.Contains(shown.String(), "--flag---flag-") {
		t.Errorf("the long grant was not shown whole: %q", shown.String())
	}
	if got := pressAll(m, t0, char('2')); len(got) != 1 {
		t.Errorf("2 after paging through the long grant: %+v (notice %q)", got, m.notice)
	}
}

// Only the grants the broker admitted are offered: a suggestion it did not
// admit is neither shown nor recorded, and with none admitted there is no
// whole-session scope.
func TestOnlyAdmittedGrants(t *testing.T) {
	a := grantAsk(sixGrants[:1])
	a.Request.SessionApproval.Grants = sixGrants // the child suggested all six
	m := &machine{}
	m.push(newEntry(a), t0)
	text := frameText(m.frame(100, 40, "parent", t0))
	if strings.Contains(text, "path_write") || strings.Contains(text, "bash: *") {
		t.Errorf("a grant the broker did not admit is shown:\n%s", text)
	}

	a.Grants = nil
	m = &machine{}
	m.push(newEntry(a), t0)
	if text := frameText(m.frame(100, 40, "parent", t0)); strings.Contains(text, "grant ") {
		t.Errorf("a grant field without admitted grants:\n%s", text)
	}
	got := pressAll(m, t0, char('s'))
	if len(got) != 1 || got[0].State != decision.StateApprovedForSession {
		t.Errorf("s without admitted grants: %+v, want this subagent only at once", got)
	}
}

// After an edit, the list is new: it must be seen again before 2.
func TestEditedGrantsSeenAgain(t *testing.T) {
	m := editing(t, compoundAsk(t))
	pressUnseen(m, t0, append(retype("curl x*"), enter)...)
	if got := pressUnseen(m, t0, char('2')); len(got) != 0 {
		t.Fatalf("2 before the edited list was drawn: %+v", got)
	}
	m.frame(100, 30, "parent", t0)
	got := pressUnseen(m, t0, char('2'))
	if len(got) != 1 || len(got[0].Grants) != 1 || got[0].Grants[0].Pattern != "curl x*" {
		t.Errorf("2 after the edited list was drawn: %+v", got)
	}
}

// On a screen too short for the frame, the lines cut to fit it were not
// shown: a list of grants cut that way does not count as seen.
func TestGrantsCutByAShortScreenNotSeen(t *testing.T) {
	m := &machine{}
	m.push(newEntry(grantAsk(sixGrants[:1])), t0)
	pressUnseen(m, t0, char('s'))
	for range 3 {
		text := frameText(m.frame(100, 3, "parent", t0))
		if strings.Contains(text, "records bash: npm test *") {
			t.Fatalf("the list fit after all:\n%s", text)
		}
		pressUnseen(m, t0, pgDown)
	}
	if got := pressUnseen(m, t0, char('2')); len(got) != 0 {
		t.Fatalf("2 with the list cut off the screen: %+v", got)
	}
	m.frame(100, 30, "parent", t0)
	if got := pressUnseen(m, t0, char('2')); len(got) != 1 {
		t.Fatalf("2 once the list was on screen: %+v (notice %q)", got, m.notice)
	}
}

// An ask without access facts (a pi 20.x child's) is not offered the
// whole session: a grant recorded for it would never answer that child's
// next ask, which carries none either.
func TestNoWholeSessionWithoutAccessFacts(t *testing.T) {
	a := grantAsk(sixGrants[:1])
	a.Request.AccessIntent = nil
	m := &machine{}
	m.push(newEntry(a), t0)
	if text := frameText(m.frame(100, 30, "parent", t0)); strings.Contains(text, "  grant      ") || strings.Contains(text, "records ") || !strings.Contains(text, serve.NoAccessFacts) {
		t.Errorf("an ask without access facts:\n%s", text)
	}
	if got := pressAll(m, t0, char('s')); len(got) != 1 || got[0].State != decision.StateApprovedForSession {
		t.Errorf("s: %+v, want this subagent only at once", got)
	}
}
