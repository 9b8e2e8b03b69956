package rules

import (
	"strings"
	"testing"
)

// mustPolicy builds a policy from a config document.
func mustPolicy(t testing.TB, doc string, opts Options) *Policy {
	t.Helper()
	cfg, err := Parse("test.json", []byte(doc))
	if err != nil {
		t.Fatalf("config: %v", err)
	}
	if opts.Home == "" {
		opts.Home = testHome
	}
	p, err := NewPolicy(cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// decidedBy renders a decision's provenance as its wire JSON.
func decidedBy(t *testing.T, d Resolution) string {
	t.Helper()
	src := d.DecidedBy()
	if src == nil {
		return "null"
	}
	raw, err := src.MarshalJSON() // json.Marshal would escape < and >
	if err != nil {
		t.Fatal(err)
	}
	return string(raw)
}

const semanticsConfig = `{
  "permission": {
    "*": "ask",
    "bash": {
      "*": "ask",
      "git *": "allow",
      "git push *": "ask",
      "git push --force*": {"action": "deny", "reason": "Force-pushing rewrites shared history; push to a new branch instead"},
      "npm *": {"action": "deny"},
      "cat *": "allow"
    },
    "read": "allow",
    "mcp_*": {"*": "deny"},
    "path_read": {"/repo/*": "allow", "*secret*": "deny"},
    "path_write": {"/repo/*": "allow"},
    "external_directory": {"~/shared/*": "allow"}
  },
  "agents": {
    "Explore": {"permission": {"bash": {"git push *": "allow", "cat *": "deny"}}},
    "Locked": {"permission": {"*": "deny"}}
  }
}`

var repoMain = "/repo/src/main.go"

func TestResolve(t *testing.T) {
	p := mustPolicy(t, semanticsConfig, Options{})
	tests := []struct {
		name      string
		q         Query
		action    Action
		reason    string
		decidedBy string
	}{
		{
			name:      "surface-wide catch-all of the bash map",
			q:         Query{Surface: "bash", MatchValues: []string{"make"}},
			action:    Ask,
			decidedBy: "null",
		},
		{
			name:      "git * matches bare git",
			q:         Query{Surface: "bash", MatchValues: []string{"git"}},
			action:    Allow,
			decidedBy: `{"kind":"rule","surface":"bash","pattern":"git *","origin":"global"}`,
		},
		{
			name:   "last match wins over an earlier broader rule",
			q:      Query{Surface: "bash", MatchValues: []string{"git push origin main"}},
			action: Ask, decidedBy: "null",
		},
		{
			name:      "deny with a teaching reason",
			q:         Query{Surface: "bash", MatchValues: []string{"git push --force origin main"}},
			action:    Deny,
			reason:    "Force-pushing rewrites shared history; push to a new branch instead",
			decidedBy: `{"kind":"rule","surface":"bash","pattern":"git push --force*","origin":"global"}`,
		},
		{
			name:      "deny without a reason",
			q:         Query{Surface: "bash", MatchValues: []string{"npm install"}},
			action:    Deny,
			decidedBy: `{"kind":"rule","surface":"bash","pattern":"npm *","origin":"global"}`,
		},
		{
			name:      "surface-wide string action reports a null pattern",
			q:         Query{Surface: "read", MatchValues: []string{"/anything"}},
			action:    Allow,
			decidedBy: `{"kind":"rule","surface":"read","pattern":null,"origin":"global"}`,
		},
		{
			name:      "the surface key is a wildcard too",
			q:         Query{Surface: "mcp_exa_search", MatchValues: []string{"query"}},
			action:    Deny,
			decidedBy: `{"kind":"rule","surface":"mcp_exa_search","pattern":"*","origin":"global"}`,
		},
		{
			name:   "unknown surface falls to the default",
			q:      Query{Surface: "webfetch", MatchValues: []string{"https://example.com"}},
			action: Ask, decidedBy: "null",
		},
		{
			name:      "agent override outranks the global rule",
			q:         Query{Surface: "bash", MatchValues: []string{"git push origin main"}, Agent: "Explore"},
			action:    Allow,
			decidedBy: `{"kind":"rule","surface":"bash","pattern":"git push *","origin":"agent"}`,
		},
		{
			name:      "agent override can tighten",
			q:         Query{Surface: "bash", MatchValues: []string{"cat /etc/passwd"}, Agent: "Explore"},
			action:    Deny,
			decidedBy: `{"kind":"rule","surface":"bash","pattern":"cat *","origin":"agent"}`,
		},
		{
			name:      "another agent's overrides do not apply",
			q:         Query{Surface: "bash", MatchValues: []string{"cat /etc/passwd"}, Agent: "Plan"},
			action:    Allow,
			decidedBy: `{"kind":"rule","surface":"bash","pattern":"cat *","origin":"global"}`,
		},
		{
			name:      "agent names match exactly",
			q:         Query{Surface: "bash", MatchValues: []string{"cat x"}, Agent: "explore"},
			action:    Allow,
			decidedBy: `{"kind":"rule","surface":"bash","pattern":"cat *","origin":"global"}`,
		},
		{
			name:      "an agent default replaces the global default only",
			q:         Query{Surface: "webfetch", MatchValues: []string{"x"}, Agent: "Locked"},
			action:    Deny,
			decidedBy: `{"kind":"rule","surface":"webfetch","pattern":null,"origin":"default"}`,
		},
		{
			name:      "an agent default does not outrank global rules",
			q:         Query{Surface: "bash", MatchValues: []string{"git status"}, Agent: "Locked"},
			action:    Allow,
			decidedBy: `{"kind":"rule","surface":"bash","pattern":"git *","origin":"global"}`,
		},
		{
			// A deny on any alias denies, though "/repo/*" allows the
			// absolute one (docs/decisions/0012-path-aliases.md).
			name:      "path aliases: a deny on any alias",
			q:         Query{Surface: "path_read", MatchValues: []string{"/repo/src/secret.txt", "src/secret.txt"}},
			action:    Deny,
			decidedBy: `{"kind":"rule","surface":"path_read","pattern":"*secret*","origin":"global"}`,
		},
		{
			name:      "path aliases: the canonical path allowed suffices",
			q:         Query{Surface: "path_write", MatchValues: []string{"src/main.go", "/repo/src/main.go"}, BoundaryValue: &repoMain},
			action:    Allow,
			decidedBy: `{"kind":"rule","surface":"path_write","pattern":"/repo/*","origin":"global"}`,
		},
		{
			// pi let one alias matching an allow suffice.
			name:      "path aliases: without a boundary every alias must be allowed",
			q:         Query{Surface: "path_write", MatchValues: []string{"src/main.go", "/repo/src/main.go"}},
			action:    Ask,
			decidedBy: "null",
		},
		{
			name:      "bare family folds onto read and write, most restrictive",
			q:         Query{Surface: "path", MatchValues: []string{"/repo/secret.env"}},
			action:    Deny,
			decidedBy: `{"kind":"rule","surface":"path","pattern":"*secret*","origin":"global"}`,
		},
		{
			name:      "bare family: both members allow",
			q:         Query{Surface: "path", MatchValues: []string{"/repo/main.go"}},
			action:    Allow,
			decidedBy: `{"kind":"rule","surface":"path","pattern":"/repo/*","origin":"global"}`,
		},
		{
			name:      "bare family sugar in config, ~ expanded",
			q:         Query{Surface: "external_directory", MatchValues: []string{testHome + "/shared/notes.md"}},
			action:    Allow,
			decidedBy: `{"kind":"rule","surface":"external_directory","pattern":"~/shared/*","origin":"global"}`,
		},
		{
			name:      "several values off a path surface: most restrictive",
			q:         Query{Surface: "bash", MatchValues: []string{"git status", "npm test"}},
			action:    Deny,
			decidedBy: `{"kind":"rule","surface":"bash","pattern":"npm *","origin":"global"}`,
		},
		{
			name:   "no match value is looked up as *",
			q:      Query{Surface: "bash"},
			action: Ask, decidedBy: "null",
		},
		{
			name:   "floor turns a config allow into ask",
			q:      Query{Surface: "bash", MatchValues: []string{"git status"}, Floor: "<opaque-bash-wrapper>"},
			action: Ask, decidedBy: "null",
		},
		{
			name:      "floor leaves a deny standing",
			q:         Query{Surface: "bash", MatchValues: []string{"npm i"}, Floor: "<opaque-bash-wrapper>"},
			action:    Deny,
			decidedBy: `{"kind":"rule","surface":"bash","pattern":"npm *","origin":"global"}`,
		},
		{
			name: "asking units: most restrictive wins, match values ignored",
			q: Query{Surface: "bash", MatchValues: []string{"git status"},
				AskingUnits: []AskingUnit{{Command: "git status"}, {Command: "npm test"}, {Command: "make"}}},
			action:    Deny,
			decidedBy: `{"kind":"rule","surface":"bash","pattern":"npm *","origin":"global"}`,
		},
		{
			name: "asking units: all allowed",
			q: Query{Surface: "bash", MatchValues: []string{"npm test"},
				AskingUnits: []AskingUnit{{Command: "git status"}, {Command: "cat README.md"}}},
			action:    Allow,
			decidedBy: `{"kind":"rule","surface":"bash","pattern":"git *","origin":"global"}`,
		},
		{
			name: "asking units: a unit's own floor",
			q: Query{Surface: "bash", MatchValues: []string{"git status"},
				AskingUnits: []AskingUnit{{Command: "git status"}, {Command: "cat x", Floor: "<unparsed-bash-subtree>"}}},
			action: Ask, decidedBy: "null",
		},
		{
			name: "asking units: the chain-level floor is not applied to units",
			q: Query{Surface: "bash", MatchValues: []string{"git status"}, Floor: "<opaque-bash-wrapper>",
				AskingUnits: []AskingUnit{{Command: "git status"}}},
			action:    Allow,
			decidedBy: `{"kind":"rule","surface":"bash","pattern":"git *","origin":"global"}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := p.Resolve(tt.q)
			if d.Action != tt.action || d.Reason != tt.reason {
				t.Errorf("got %s %q, want %s %q (%v)", d.Action, d.Reason, tt.action, tt.reason, d)
			}
			if got := decidedBy(t, d); got != tt.decidedBy {
				t.Errorf("decidedBy %s, want %s", got, tt.decidedBy)
			}
		})
	}
}

func TestResolveFirstWinsTies(t *testing.T) {
	p := mustPolicy(t, `{"permission": {"bash": {"a*": {"action": "deny", "reason": "first"}, "b*": {"action": "deny", "reason": "second"}}}}`, Options{})
	d := p.Resolve(Query{Surface: "bash", AskingUnits: []AskingUnit{{Command: "a"}, {Command: "b"}}})
	if d.Reason != "first" || d.Value != "a" {
		t.Errorf("tie went to %q (%q), want the first unit", d.Reason, d.Value)
	}
	d = p.Resolve(Query{Surface: "bash", MatchValues: []string{"b", "a"}})
	if d.Reason != "second" {
		t.Errorf("tie went to %q, want the first value", d.Reason)
	}
}

func TestSessionRulesAndConfig(t *testing.T) {
	p := mustPolicy(t, semanticsConfig, Options{})
	if _, err := p.Sessions().Record(WidthProven, SessionGrant{Surface: "bash", Pattern: "git push *"}, SessionGrant{Surface: "bash", Pattern: "npm test"}); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name      string
		q         Query
		action    Action
		decidedBy string
	}{
		{"session grant beats a config ask", Query{Surface: "bash", MatchValues: []string{"git push origin"}}, Allow,
			`{"kind":"session_approval","surface":"bash","pattern":"git push *"}`},
		{"session grant beats a config allow", Query{Surface: "bash", MatchValues: []string{"git push x"}, Agent: "Explore"}, Allow,
			`{"kind":"session_approval","surface":"bash","pattern":"git push *"}`},
		// pi composes session rules last, so that a grant outranked even a
		// config deny it covered; courier keeps the operator's denies above
		// every grant (docs/decisions/0011-deny-above-grants.md).
		{"a config deny stands above a grant", Query{Surface: "bash", MatchValues: []string{"git push --force"}}, Deny,
			`{"kind":"rule","surface":"bash","pattern":"git push --force*","origin":"global"}`},
		{"a config deny stands above an exact grant", Query{Surface: "bash", MatchValues: []string{"npm test"}, Agent: "Explore"}, Deny,
			`{"kind":"rule","surface":"bash","pattern":"npm *","origin":"global"}`},
		{"a floor does not clamp a session grant", Query{Surface: "bash", MatchValues: []string{"git push x"}, Floor: "<opaque-bash-wrapper>"}, Allow,
			`{"kind":"session_approval","surface":"bash","pattern":"git push *"}`},
		{"other commands are unaffected", Query{Surface: "bash", MatchValues: []string{"npm install"}}, Deny,
			`{"kind":"rule","surface":"bash","pattern":"npm *","origin":"global"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := p.Resolve(tt.q)
			if d.Action != tt.action || decidedBy(t, d) != tt.decidedBy {
				t.Errorf("got %s %s, want %s %s", d.Action, decidedBy(t, d), tt.action, tt.decidedBy)
			}
		})
	}
}

func TestYolo(t *testing.T) {
	doc := strings.Replace(semanticsConfig, `"permission": {`, `"yoloMode": true, "permission": {`, 1)
	p := mustPolicy(t, doc, Options{})
	if !p.YoloMode() {
		t.Fatal("yolo not read")
	}
	if _, err := p.Sessions().Record(WidthProven, SessionGrant{Surface: "bash", Pattern: "make *"}); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name      string
		q         Query
		action    Action
		decidedBy string
	}{
		{"an ask rule becomes an allow by yolo", Query{Surface: "bash", MatchValues: []string{"git push origin"}}, Allow,
			`{"kind":"yolo","pattern":"git push *"}`},
		{"the ask default becomes an allow by yolo", Query{Surface: "webfetch", MatchValues: []string{"x"}}, Allow,
			`{"kind":"yolo","pattern":null}`},
		{"denies stay", Query{Surface: "bash", MatchValues: []string{"git push --force"}}, Deny,
			`{"kind":"rule","surface":"bash","pattern":"git push --force*","origin":"global"}`},
		{"allows stay config allows", Query{Surface: "bash", MatchValues: []string{"git status"}}, Allow,
			`{"kind":"rule","surface":"bash","pattern":"git *","origin":"global"}`},
		{"a floored allow is approved by yolo with the floor as pattern", Query{Surface: "bash", MatchValues: []string{"git status"}, Floor: "<opaque-bash-wrapper>"}, Allow,
			`{"kind":"yolo","pattern":"<opaque-bash-wrapper>"}`},
		{"a floored session grant stays a session grant", Query{Surface: "bash", MatchValues: []string{"make"}, Floor: "<unparseable-bash-command>"}, Allow,
			`{"kind":"session_approval","surface":"bash","pattern":"make *"}`},
		{"a floored deny stays", Query{Surface: "bash", MatchValues: []string{"npm i"}, Floor: "<opaque-bash-wrapper>"}, Deny,
			`{"kind":"rule","surface":"bash","pattern":"npm *","origin":"global"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := p.Resolve(tt.q)
			if d.Action != tt.action || decidedBy(t, d) != tt.decidedBy {
				t.Errorf("got %s %s, want %s %s", d.Action, decidedBy(t, d), tt.action, tt.decidedBy)
			}
		})
	}
}

func TestQueryFromIntent(t *testing.T) {
	p := mustPolicy(t, semanticsConfig, Options{})
	q := QueryFromIntent(&intentFixture)
	if q.Surface != "bash" || q.Agent != "Explore" || q.Floor != "<opaque-bash-wrapper>" || q.Cwd != "/worktree" ||
		len(q.AskingUnits) != 1 || q.AskingUnits[0].Floor != "<indirection-bash-wrapper>" {
		t.Errorf("query = %+v", q)
	}
	if d := p.Resolve(q); d.Action != Ask {
		t.Errorf("floored unit: %v", d)
	}
	// No intent: ask, even when everything is allowed.
	yolo := mustPolicy(t, `{"yoloMode": true, "permission": {"*": "allow"}}`, Options{})
	if d := yolo.Resolve(QueryFromIntent(nil)); d.Action != Ask || d.DecidedBy() != nil {
		t.Errorf("no intent: %v", d)
	}
}
