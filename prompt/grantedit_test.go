package prompt

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/seed6639df8c/courier/decision"
	"github.com/seed6639df8c/courier/serve"
	"github.com/seed6639df8c/courier/wire"
)

// compoundAsk is `git status && curl x` resolved by the rules, with the
// child's suggestion "bash: curl *": a grant for the curl unit.
func compoundAsk(t *testing.T) serve.Ask {
	a := resolvedAsk(t, "git status && curl x")
	a.Request.SessionApproval = &wire.SessionApproval{Grants: []wire.SuggestedGrant{{Surface: "bash", Pattern: "curl *"}}}
	a.Grants = []wire.SuggestedGrant{{Surface: "bash", Pattern: "curl *"}}
	return a
}

// editing is a machine with the ask on screen and the grant editor open
// on it: s (yes, for this session), then e.
func editing(t *testing.T, a serve.Ask) *machine {
	t.Helper()
	m := &machine{home: "/home/op"}
	m.push(newEntry(a), t0)
	if got := pressAll(m, t0, char('s'), char('e')); len(got) != 0 || m.stage != stageEdit {
		t.Fatalf("s e: answers %+v, stage %d", got, m.stage)
	}
	return m
}

// retype clears the editor and types s.
func retype(s string) []key { return append([]key{kill}, runes(s)...) }

func TestEditAccepted(t *testing.T) {
	m := editing(t, compoundAsk(t))
	if got := string(m.edit.text); got != "curl *" {
		t.Fatalf("the editor opens with %q, want the suggestion", got)
	}
	text := frameText(m.frame(100, 28, "parent", t0))
	for _, want := range []string{"Edit the whole-session grant on bash", "pattern > curl *█", "it must match curl x",
		"enter accepts · esc cancels the edit"} {
		if !strings.Contains(text, want) {
			t.Errorf("editor frame lacks %q:\n%s", want, text)
		}
	}
	if got := pressAll(m, t0, append(retype("curl x*"), enter)...); len(got) != 0 {
		t.Fatalf("accepting the edit answered: %+v", got)
	}
	if m.stage != stageScope || m.cursor != scopeSubagent {
		t.Fatalf("after the edit: stage %d cursor %d, want the scope choice on this subagent", m.stage, m.cursor)
	}
	if want := []wire.SuggestedGrant{{Surface: "bash", Pattern: "curl x*"}}; !reflect.DeepEqual(m.grants, want) {
		t.Fatalf("grants = %+v, want %+v", m.grants, want)
	}
	text = frameText(m.frame(100, 28, "parent", t0))
	for _, want := range []string{"Apply a session grant to:", "records bash: curl x*  (edited)"} {
		if !strings.Contains(text, want) {
			t.Errorf("scope frame lacks %q:\n%s", want, text)
		}
	}

	// The edited grants reach the decision of the whole session...
	got := pressAll(m, t0, char('2'))
	if len(got) != 1 {
		t.Fatalf("2 gave %d answers", len(got))
	}
	d := got[0]
	if d.State != decision.StateApprovedForServingSession || !reflect.DeepEqual(d.Grants, []wire.SuggestedGrant{{Surface: "bash", Pattern: "curl x*"}}) {
		t.Errorf("decision = %+v, want the whole session with the edited grant", d)
	}
	// ...and do not alias the machine's.
	if m.grants != nil {
		t.Errorf("the next ask starts with grants %+v", m.grants)
	}
}

func TestEditOnlyForTheWholeSession(t *testing.T) {
	// An edit, then this subagent only: the child records its own
	// suggestion, and the decision carries no grants.
	m := editing(t, compoundAsk(t))
	got := pressAll(m, t0, append(append(retype("curl x*"), enter), char('1'))...)
	if len(got) != 1 || got[0].State != decision.StateApprovedForSession || got[0].Grants != nil {
		t.Errorf("this subagent only after an edit: %+v", got)
	}

	// e means nothing in the first choice, and the scope footer offers it
	// for the whole session.
	m = &machine{}
	m.push(newEntry(compoundAsk(t)), t0)
	if got := pressAll(m, t0, char('e')); len(got) != 0 || m.stage != stageChoose {
		t.Errorf("e in the first choice: %+v, stage %d", got, m.stage)
	}
	pressAll(m, t0, char('s'))
	if text := frameText(m.frame(100, 28, "parent", t0)); !strings.Contains(text, "e edits the whole-session grant") {
		t.Errorf("the scope choice does not offer the edit:\n%s", text)
	}
}

func TestEditRejected(t *testing.T) {
	m := editing(t, compoundAsk(t))
	for _, tt := range []struct{ typed, why string }{
		// The grant was suggested for the curl unit: another command is
		// refused, and so is a pattern for the other unit of the line.
		{"wget *", `"wget *" does not match what the grant was suggested for: curl x`},
		{"git status *", `"git status *" does not match what the grant was suggested for: curl x`},
		// The whole line is never what a bash grant matches.
		{"git status && curl x", "does not match"},
		{"curl y*", "does not match"},
		{"   ", "a pattern is required"},
		{"", "a pattern is required"},
	} {
		if got := pressAll(m, t0, append(retype(tt.typed), enter)...); len(got) != 0 {
			t.Fatalf("%q answered: %+v", tt.typed, got)
		}
		if m.stage != stageEdit || !strings.Contains(m.notice, tt.why) {
			t.Errorf("%q: stage %d, notice %q; want the editor open and %q", tt.typed, m.stage, m.notice, tt.why)
		}
		// The editor keeps what was typed, to be corrected.
		if string(m.edit.text) != tt.typed {
			t.Errorf("%q: the editor holds %q", tt.typed, string(m.edit.text))
		}
	}
	text := frameText(m.frame(100, 28, "parent", t0))
	if !strings.Contains(text, "! a pattern is required") || !strings.Contains(text, "it must match curl x") {
		t.Errorf("rejected frame:\n%s", text)
	}
	// Corrected, it is accepted.
	pressAll(m, t0, append(retype("curl x"), enter)...)
	if m.stage != stageScope || m.grants[0].Pattern != "curl x" {
		t.Errorf("corrected edit: stage %d grants %+v", m.stage, m.grants)
	}
}

func TestEditCancelled(t *testing.T) {
	m := editing(t, compoundAsk(t))
	pressAll(m, t0, append(retype("curl x*"), esc)...)
	if m.stage != stageScope || m.grants != nil || !strings.Contains(m.notice, "cancelled") {
		t.Fatalf("after esc: stage %d grants %+v notice %q", m.stage, m.grants, m.notice)
	}
	// Esc in the scope choice is still this subagent only; here, 2.
	got := pressAll(m, t0, char('2'))
	if len(got) != 1 || got[0].State != decision.StateApprovedForServingSession || got[0].Grants != nil {
		t.Errorf("the whole session after a cancelled edit: %+v, want the suggestion (nil grants)", got)
	}

	// Esc in a second edit restores the first one.
	m = editing(t, compoundAsk(t))
	pressAll(m, t0, append(retype("curl x*"), enter)...)
	pressAll(m, t0, char('e'))
	if string(m.edit.text) != "curl x*" {
		t.Errorf("a second edit opens with %q, want the first edit", string(m.edit.text))
	}
	pressAll(m, t0, append(retype("curl xy"), esc)...)
	if m.grants[0].Pattern != "curl x*" {
		t.Errorf("esc in a second edit left %+v", m.grants)
	}

	// Accepting the suggestion unchanged is no edit.
	m = editing(t, compoundAsk(t))
	pressAll(m, t0, enter)
	if m.stage != stageScope || m.grants != nil {
		t.Errorf("an unchanged pattern: stage %d grants %+v", m.stage, m.grants)
	}
}

func TestEditInput(t *testing.T) {
	m := editing(t, compoundAsk(t))
	// Controls and format characters are not typed; backspace and ctrl-u
	// edit.
	pressAll(m, t0, append(retype("curl \x1b[2Jx\u202e"), bs, bs, char('x'), char('y'), bs, char('*'))...)
	if got := string(m.edit.text); got != "curl [2x*" {
		t.Fatalf("typed %q", got)
	}
	// The length is capped.
	pressAll(m, t0, retype("curl "+strings.Repeat("x", 2*maxPattern))...)
	if len(m.edit.text) != maxPattern {
		t.Errorf("pattern length = %d, want the cap %d", len(m.edit.text), maxPattern)
	}

	// A hostile suggestion is shown escaped; changed, it must be typable.
	a := compoundAsk(t)
	a.Grants[0].Pattern = "curl \x1b[2J*"
	m = editing(t, a)
	for _, l := range m.frame(100, 28, "parent", t0) {
		assertInert(t, l.text)
	}
	if text := frameText(m.frame(100, 28, "parent", t0)); !strings.Contains(text, `pattern > curl \x1b[2J*█`) {
		t.Errorf("hostile suggestion in the editor:\n%s", text)
	}
	pressAll(m, t0, bs, char('*'), char('*'), enter)
	if m.stage != stageEdit || !strings.Contains(m.notice, "cannot be typed") {
		t.Errorf("an edited pattern with a control: stage %d notice %q", m.stage, m.notice)
	}
}

func TestEditSeveralGrants(t *testing.T) {
	a := testAsk("reviewer", "/w/src/a.go", false)
	a.Request.Surface, a.Request.AccessIntent.Surface = "write", "path_write"
	a.Request.AccessIntent.MatchValues = []string{"/w/src/a.go", "src/a.go"}
	a.Request.SessionApproval = &wire.SessionApproval{Grants: []wire.SuggestedGrant{
		{Surface: "path_write", Pattern: "/w/src/*"},
		{Surface: "path_read", Pattern: "/w/src/*"},
	}}
	a.Grants = slices.Clone(a.Request.SessionApproval.Grants)
	m := editing(t, a)
	if text := frameText(m.frame(100, 28, "parent", t0)); !strings.Contains(text, "grant on path_write (1 of 2)") {
		t.Errorf("first of two:\n%s", text)
	}
	pressAll(m, t0, append(retype("/etc/*"), enter)...)
	if m.edit.at != 0 || !strings.Contains(m.notice, "/w/src/a.go") {
		t.Fatalf("a path elsewhere: at %d notice %q", m.edit.at, m.notice)
	}
	pressAll(m, t0, append(retype("/w/src/*.go"), enter)...)
	if m.stage != stageEdit || m.edit.at != 1 || string(m.edit.text) != "/w/src/*" {
		t.Fatalf("after the first: stage %d at %d text %q", m.stage, m.edit.at, string(m.edit.text))
	}
	pressAll(m, t0, enter)
	got := pressAll(m, t0, char('2'))
	want := []wire.SuggestedGrant{{Surface: "path_write", Pattern: "/w/src/*.go"}, {Surface: "path_read", Pattern: "/w/src/*"}}
	if len(got) != 1 || !reflect.DeepEqual(got[0].Grants, want) {
		t.Errorf("decision %+v, want grants %+v", got, want)
	}
	// The admitted grants themselves are untouched.
	if a.Grants[0].Pattern != "/w/src/*" {
		t.Errorf("the edit wrote through to the ask: %+v", a.Grants)
	}
}

func TestEditExpandsHome(t *testing.T) {
	a := testAsk("reviewer", "/home/op/notes/a.txt", false)
	a.Request.AccessIntent.Surface = "path_read"
	a.Grants = []wire.SuggestedGrant{{Surface: "path_read", Pattern: "/home/op/notes/*"}}
	m := editing(t, a)
	pressAll(m, t0, append(retype("~/notes/*.txt"), enter)...)
	if m.stage != stageScope || m.grants[0].Pattern != "~/notes/*.txt" {
		t.Errorf("~ in an edit: stage %d grants %+v notice %q", m.stage, m.grants, m.notice)
	}
}

func TestEditScreens(t *testing.T) {
	m := editing(t, compoundAsk(t))
	golden(t, "edit_open", screenOf(m, 100, 30))
	pressAll(m, t0, append(retype("wget *"), enter)...)
	golden(t, "edit_rejected", screenOf(m, 100, 30))
	pressAll(m, t0, append(retype("curl x*"), enter)...)
	golden(t, "edit_accepted", screenOf(m, 100, 30))
}
