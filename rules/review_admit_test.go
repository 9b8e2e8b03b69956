package rules

import (
	"strings"
	"testing"

	"github.com/seed6639df8c/courier/wire"
)

// TestSuggestionsNotTooWide: the review's finding 6. A file in a top-level
// or the home directory gets its exact path; a shell, an interpreter or a
// wrapper gets the exact unit. And the admission that compares against
// the suggestion refuses the wide grants the review had admitted.
func TestSuggestionsNotTooWide(t *testing.T) {
	tests := []struct{ surface, value, want string }{
		{"path_write", "/etc/x", "/etc/x"},
		{"path_write", "/home/ada", "/home/ada"},
		{"path_write", "~/notes.txt", "~/notes.txt"},
		{"path_write", userHome() + "/notes.txt", userHome() + "/notes.txt"},
		{"path_write", "/srv/app/work/a.go", "/srv/app/work/*"},
		{"bash", "bash x.sh", "bash x.sh"},
		{"bash", "source x.sh", "source x.sh"},
		{"bash", ". x.sh", ". x.sh"},
		{"bash", "awk 1 x", "awk 1 x"},
		{"bash", "npx foo", "npx foo"},
		{"bash", "python3.12 -m http.server", "python3.12 -m http.server"},
		{"bash", "sudo make install", "sudo make install"},
		{"bash", "env FOO=1 make", ""}, // no plain pattern exists
		{"bash", "bun x cowsay", ""},
		{"bash", "cp a b", "cp *"},
		{"bash", "git status --short", "git status *"},
	}
	for _, tt := range tests {
		if got := SuggestGrant(tt.surface, tt.value).Pattern; got != tt.want {
			t.Errorf("SuggestGrant(%q, %q) = %q, want %q", tt.surface, tt.value, got, tt.want)
		}
	}
	p := mustPolicy(t, `{"permission": {"*": "ask"}}`, Options{})
	b := func(s string) *string { return &s }
	for _, c := range []struct {
		q Query
		g wire.SuggestedGrant
	}{
		{Query{Surface: "path_write", MatchValues: []string{"/home/ada"}, BoundaryValue: b("/home/ada")}, wire.SuggestedGrant{Surface: "path_write", Pattern: "/home/*"}},
		{Query{Surface: "path", MatchValues: []string{"/etc/x"}}, wire.SuggestedGrant{Surface: "path", Pattern: "/etc/*"}},
		{Query{Surface: "bash", MatchValues: []string{"bash x.sh"}}, wire.SuggestedGrant{Surface: "bash", Pattern: "bash *"}},
		{Query{Surface: "bash", MatchValues: []string{"source x.sh"}}, wire.SuggestedGrant{Surface: "bash", Pattern: "source *"}},
		{Query{Surface: "bash", MatchValues: []string{". x.sh"}}, wire.SuggestedGrant{Surface: "bash", Pattern: ". *"}},
		{Query{Surface: "bash", MatchValues: []string{"awk 1 x"}}, wire.SuggestedGrant{Surface: "bash", Pattern: "awk *"}},
		{Query{Surface: "bash", MatchValues: []string{"npx foo"}}, wire.SuggestedGrant{Surface: "bash", Pattern: "npx *"}},
	} {
		if admitted, _ := p.AdmitGrants(c.q, []wire.SuggestedGrant{c.g}); len(admitted) != 0 {
			t.Errorf("%v for %q admitted", c.g, c.q.MatchValues[0])
		}
	}
}

// TestAdmitCoversTheBoundary: the review's finding 7. With a boundary
// value, a grant must cover the boundary: one covering only a fifth alias
// (hidden below the prompt's "matched as" list) is dropped.
func TestAdmitCoversTheBoundary(t *testing.T) {
	p := mustPolicy(t, `{"permission": {"*": "ask"}}`, Options{})
	b := "/work/proj/a.go"
	q := Query{Surface: "path_write", MatchValues: []string{b, "a.go", "/work/proj/./a.go", "/work/proj//a.go", "/etc/cron.d/x"}, BoundaryValue: &b}
	admitted, dropped := p.AdmitGrants(q, []wire.SuggestedGrant{
		{Surface: "path_write", Pattern: "/etc/cron.d/*"},
		{Surface: "path_write", Pattern: "/work/proj/*"},
	})
	if len(admitted) != 1 || admitted[0].Pattern != "/work/proj/*" || len(dropped) != 1 {
		t.Errorf("admitted %v, dropped %v; want only the boundary's directory", admitted, dropped)
	}
}

// TestPathSpellingsMeetDenies: the review's finding 9. Spellings the child
// left unexpanded meet the deny written for the expanded path, and a
// relative value the broker cannot place never allows.
func TestPathSpellingsMeetDenies(t *testing.T) {
	p := mustPolicy(t, `{"permission": {"*": "ask", "path_write": {"*": "allow", "~/.ssh/*": "deny"}}}`, Options{})
	for _, q := range []Query{
		{Surface: "path_write", MatchValues: []string{"~/.ssh/authorized_keys"}},
		{Surface: "path_write", MatchValues: []string{"$HOME/.ssh/authorized_keys"}},
		{Surface: "path_write", MatchValues: []string{"${HOME}/.ssh/authorized_keys"}},
		{Surface: "path_write", MatchValues: []string{"~/.ssh/../.ssh/authorized_keys"}},
		{Surface: "path_write", MatchValues: []string{".ssh/authorized_keys"}, Cwd: testHome},
		{Surface: "path", MatchValues: []string{"~/.ssh/authorized_keys"}},
	} {
		if d := p.Resolve(q); d.Action != Deny {
			t.Errorf("%q (cwd %q): %v, want deny", q.MatchValues[0], q.Cwd, d)
		}
	}
	if d := p.Resolve(Query{Surface: "path_write", MatchValues: []string{"notes/a.txt"}}); d.Action == Allow {
		t.Errorf("a relative value without a cwd: %v, want at most ask", d)
	}
	if d := p.Resolve(Query{Surface: "path_write", MatchValues: []string{"notes/a.txt"}, Cwd: "/work"}); d.Action != Allow {
		t.Errorf("a relative value with a cwd: %v, want allow", d)
	}
}

// TestAdmitCapsPatternLength: the review's finding 10. A grant pattern
// past MaxAdmittedPattern bytes is dropped with why.
func TestAdmitCapsPatternLength(t *testing.T) {
	p := mustPolicy(t, `{"permission": {"*": "ask"}}`, Options{})
	long := "c" + strings.Repeat("a", MaxAdmittedPattern)
	admitted, dropped := p.AdmitGrants(Query{Surface: "bash", MatchValues: []string{long + " x"}}, []wire.SuggestedGrant{{Surface: "bash", Pattern: long + " *"}})
	if len(admitted) != 0 || len(dropped) != 1 || !strings.Contains(dropped[0].Why, "bytes") {
		t.Errorf("admitted %v, dropped %v", admitted, dropped)
	}
}
