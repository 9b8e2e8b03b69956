package rules

import (
	"strings"
	"testing"
)

// TestDenyAboveGrants is the attack of the hardening review: a hidden
// whole-session grant `bash *` (and `path_write /*`) was recorded, and
// another subagent's `sudo rm -rf /`, `git push --force origin main` and a
// write of ~/.ssh/authorized_keys were then "allowed by a session grant"
// over the config's deny rules. A grant never overrides a deny of the
// config, with or without yolo; it still wins over the config's allow and
// ask (docs/decisions/0011-deny-above-grants.md).
func TestDenyAboveGrants(t *testing.T) {
	keys := testHome + "/.ssh/authorized_keys"
	for _, yolo := range []bool{false, true} {
		doc := string(DefaultConfigJSON())
		if yolo {
			doc = strings.Replace(doc, `"yoloMode": false`, `"yoloMode": true`, 1)
		}
		p := mustPolicy(t, doc, Options{})
		if p.YoloMode() != yolo {
			t.Fatal("yolo not set")
		}
		if _, err := p.Sessions().Record(WidthProven, SessionGrant{Surface: "bash", Pattern: "*"}, SessionGrant{Surface: "path_write", Pattern: "/*"}); err != nil {
			t.Fatal(err)
		}
		tests := []struct {
			name string
			q    Query
			want Action
			// origin and pattern say who decided; reason starts a deny's.
			origin  Origin
			pattern string
			reason  string
		}{
			{"sudo", Query{Surface: "bash", MatchValues: []string{"sudo rm -rf /"}}, Deny, OriginGlobal, "sudo *", "A subagent may not run commands as root"},
			{"sudo as an asking unit", Query{Surface: "bash", MatchValues: []string{"sudo rm -rf /"}, AskingUnits: []AskingUnit{{Command: "sudo rm -rf /", Floor: "<indirection-bash-wrapper>"}}}, Deny, OriginGlobal, "sudo *", "A subagent may not run commands as root"},
			{"force push", Query{Surface: "bash", MatchValues: []string{"git push --force origin main"}}, Deny, OriginGlobal, "git push --force*", "Force-pushing"},
			{"force push behind an allowed command", Query{Surface: "bash", MatchValues: []string{"git status && git push --force origin main"}}, Deny, OriginGlobal, "git push --force*", "Force-pushing"},
			{"rm -rf /", Query{Surface: "bash", MatchValues: []string{"rm -rf /"}}, Deny, OriginGlobal, "rm -rf /", "This deletes the whole filesystem"},
			{"ssh keys", Query{Surface: "path_write", MatchValues: []string{keys}, BoundaryValue: &keys}, Deny, OriginGlobal, "~/.ssh/*", "SSH keys stay private"},
			// What the grants are for still works: over an ask, and over
			// an allow (the answer then says a session grant approved it).
			{"grant over the ask default", Query{Surface: "bash", MatchValues: []string{"make test"}}, Allow, OriginSession, "*", ""},
			{"grant over a config allow", Query{Surface: "bash", MatchValues: []string{"git status"}}, Allow, OriginSession, "*", ""},
			{"path grant over the ask default", Query{Surface: "path_write", MatchValues: []string{"/tmp/x"}}, Allow, OriginSession, "/*", ""},
		}
		for _, tt := range tests {
			t.Run(map[bool]string{false: "plain/", true: "yolo/"}[yolo]+tt.name, func(t *testing.T) {
				d := p.Resolve(tt.q)
				pat := ""
				if d.Pattern != nil {
					pat = *d.Pattern
				}
				if d.Action != tt.want || d.Origin != tt.origin || pat != tt.pattern || !strings.HasPrefix(d.Reason, tt.reason) {
					t.Errorf("got %v %q, want %s by %s %q (reason %q…)", d, d.Reason, tt.want, tt.origin, tt.pattern, tt.reason)
				}
			})
		}
	}
}

// TestDenyAboveGrantsOrder: any config deny that matches keeps a grant
// from applying, even one a later config rule overrides (last match wins
// there, and decides); an agent's deny stands above the grant like a
// global one (the review's finding 5: grants used to speak whenever the
// last matching config rule was not a deny).
func TestDenyAboveGrantsOrder(t *testing.T) {
	p := mustPolicy(t, `{"permission": {"*": "ask", "bash": {
		"make *": {"action": "deny", "reason": "no make"},
		"make test": "ask"
	}}, "agents": {"Locked": {"permission": {"bash": {"make test": "deny"}}}}}`, Options{})
	if _, err := p.Sessions().Record(WidthProven, SessionGrant{Surface: "bash", Pattern: "make *"}); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		q      Query
		want   Action
		origin Origin
	}{
		{Query{Surface: "bash", MatchValues: []string{"make test"}}, Ask, OriginGlobal},
		{Query{Surface: "bash", MatchValues: []string{"make deploy"}}, Deny, OriginGlobal},
		{Query{Surface: "bash", MatchValues: []string{"make test"}, Agent: "Locked"}, Deny, OriginAgent},
	}
	for _, tt := range tests {
		if d := p.Resolve(tt.q); d.Action != tt.want || d.Origin != tt.origin {
			t.Errorf("%+v: got %v, want %s by %s", tt.q, d, tt.want, tt.origin)
		}
	}
}

// TestShadowedDenyAboveGrants: the review's finding 5, verbatim. A deny
// on the path family under a wider path_write ask, and a global deny under
// an agent's wider ask, both outrank an admitted grant.
func TestShadowedDenyAboveGrants(t *testing.T) {
	keys := testHome + "/.ssh/authorized_keys"
	p := mustPolicy(t, `{"permission": {"*": "ask", "path": {"~/.ssh/*": "deny"}, "path_write": {"/work/*": "allow", "*": "ask"}}}`, Options{})
	if _, err := p.Sessions().Record(WidthProven, SessionGrant{Surface: "path_write", Pattern: testHome + "/*"}); err != nil {
		t.Fatal(err)
	}
	if d := p.Resolve(Query{Surface: "path_write", MatchValues: []string{keys}, BoundaryValue: &keys}); d.Action != Ask || d.Origin != OriginGlobal {
		t.Errorf("ssh keys after a home grant: %v, want ask by global", d)
	}
	if d := p.Resolve(Query{Surface: "path_write", MatchValues: []string{testHome + "/notes.txt"}}); d.Action != Allow || d.Origin != OriginSession {
		t.Errorf("the grant itself: %v, want allow by session", d)
	}
	p2 := mustPolicy(t, `{"permission": {"*": "ask", "bash": {"git push --force*": "deny"}}, "agents": {"Explore": {"permission": {"bash": {"*": "ask"}}}}}`, Options{})
	if _, err := p2.Sessions().Record(WidthProven, SessionGrant{Surface: "bash", Pattern: "git push *"}); err != nil {
		t.Fatal(err)
	}
	for _, agent := range []string{"", "Explore"} {
		d := p2.Resolve(Query{Surface: "bash", MatchValues: []string{"git push --force origin main"}, Agent: agent})
		if d.Origin == OriginSession || d.Action == Allow {
			t.Errorf("agent %q: %v, want no session allow", agent, d)
		}
	}
	e := p2.Explain(Query{Surface: "bash", MatchValues: []string{"git push --force origin main"}, Agent: "Explore"})
	if len(e.Steps) == 0 || len(e.Steps[0].Outranked) != 1 {
		t.Errorf("explain: the grant is not listed as outranked: %+v", e.Steps)
	}
}

// TestExplainDenyAboveGrant: `broker check` says that a grant matched and
// the config's deny stood above it.
func TestExplainDenyAboveGrant(t *testing.T) {
	p := defaultPolicy(t)
	if _, err := p.Sessions().Record(WidthProven, SessionGrant{Surface: "bash", Pattern: "*"}); err != nil {
		t.Fatal(err)
	}
	e := p.Explain(Query{Surface: "bash", MatchValues: []string{"git push --force origin main"}})
	var out strings.Builder
	if err := e.WriteText(&out); err != nil {
		t.Fatal(err)
	}
	text := out.String()
	for _, want := range []string{
		"→ deny",
		`decided by  global rule bash "git push --force*"`,
		`session  bash  "*"`,
		"a session grant never overrides a deny of the config",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("explanation lacks %q:\n%s", want, text)
		}
	}
	if len(e.Steps) != 1 || len(e.Steps[0].Outranked) != 1 || e.Steps[0].Outranked[0].Origin != OriginSession {
		t.Errorf("steps %+v", e.Steps)
	}
}
