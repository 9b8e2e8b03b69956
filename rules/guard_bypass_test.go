package rules

import (
	"path"
	"slices"
	"strings"
	"testing"

	"github.com/seed6639df8c/courier/bashunits"
)

// The broker's own files, protected beside the agent directory: a review
// log, a config and a grants journal kept elsewhere.
const (
	reviewLogFile  = "/var/lib/courier/review.jsonl"
	brokerConfig   = "/etc/courier/config.json"
	grantsJournals = "/srv/mailbox/.courier/grants"
)

// bypassPolicy allows everything it can (yolo, allow-all rules, grants
// for every bash command and every path): only the guard can deny.
func bypassPolicy(t testing.TB) *Policy {
	t.Helper()
	p := mustPolicy(t, permissiveConfig, Options{Protected: []string{agentDir, mailboxRoot, reviewLogFile, brokerConfig, grantsJournals}})
	if _, err := p.Sessions().Record(WidthFamily, SessionGrant{Surface: "path_write", Pattern: "*"}, SessionGrant{Surface: "bash", Pattern: "*"}, SessionGrant{Surface: "mcp_fs_write", Pattern: "*"}); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestGuardBypasses: every way the hardening review got past the
// self-approval guard, and the writes to the broker's own files that only
// asked. Each must be denied by the built-in rule.
func TestGuardBypasses(t *testing.T) {
	p := bypassPolicy(t)
	settings := "~/.pi/agent/settings.json"
	bash := func(line string) Query { return Query{Surface: "bash", MatchValues: []string{line}} }
	tests := []struct {
		name string
		q    Query
	}{
		// Spellings of the agent directory in a command line.
		{"double slash", bash("cp evil.json ~/.pi//agent/sessions/permission-forwarding/sessions/p/responses/perm-1.json")},
		{"dot segment", bash("cp evil.json ~/.pi/./agent/settings.json")},
		{"dot-dot segment", bash("cp evil.json ~/.pi/x/../agent/settings.json")},
		{"dot-dot from elsewhere", bash("cp evil.json /tmp/../home/ada/.pi/agent/settings.json")},
		{"trailing dot", bash("cp evil.json ~/.pi/agent/.")},
		{"? glob", bash("cp evil.json ~/.p?/agent/settings.json")},
		{"* glob", bash("cp evil.json ~/.pi/ag*/settings.json")},
		{"* glob over a segment", bash("cp evil.json /home/ada/*/agent/settings.json")},
		{"bracket glob", bash("cp evil.json /home/ada/.pi/[a]gent/settings.json")},
		{"brace expansion", bash("cp evil.json ~/.pi/{agent,x}/settings.json")},
		{"$PI_CODING_AGENT_DIR", bash("cp evil.json $PI_CODING_AGENT_DIR/settings.json")},
		{"${PI_CODING_AGENT_DIR}", bash("cp evil.json ${PI_CODING_AGENT_DIR}/settings.json")},
		{"quoted $PI_CODING_AGENT_DIR", bash(`cp evil.json "$PI_CODING_AGENT_DIR"/settings.json`)},
		{"$PI_CODING_AGENT_DIR dot-dot", bash("cp evil.json $PI_CODING_AGENT_DIR/../agent/settings.json")},
		{"quotes inside the path", bash(`cp evil.json /home/ada/.pi/'agent'/settings.json`)},
		{"escapes inside the path", bash(`cp evil.json /home/ada/.pi/a\gent/settings.json`)},
		{"$HOME quoted apart", bash(`cp evil.json "$HOME"/.pi/agent/settings.json`)},
		{"./ relative to the requester's cwd", Query{Surface: "bash", MatchValues: []string{"cp evil.json ./.pi/agent/settings.json"}, Cwd: testHome}},
		{"../ relative to the requester's cwd", Query{Surface: "bash", MatchValues: []string{"cp evil.json ../.pi/agent/settings.json"}, Cwd: testHome + "/work"}},
		{"bare relative name in the requester's cwd", Query{Surface: "bash", MatchValues: []string{"tee settings.json"}, Cwd: agentDir}},
		{"cd into the tree first", Query{Surface: "bash", MatchValues: []string{"cd ~/.pi && cp evil.json agent/settings.json"}, Cwd: "/tmp"}},
		// Bash units that write there.
		{"mv", bash("mv evil.json ~/.pi//agent/settings.json")},
		{"sed -i", bash("sed -i s/ask/allow/ ~/.pi//agent/settings.json")},
		{"tee", bash("echo {} | tee ~/.pi//agent/settings.json")},
		{"install", bash("install -m 600 evil.json ~/.pi//agent/settings.json")},
		{"ln", bash("ln -sf /tmp/evil.json ~/.pi//agent/settings.json")},
		{"dd of=", bash("dd if=evil.json of=~/.pi//agent/settings.json")},
		{"--option=", bash("cp --target-directory=~/.pi//agent evil.json")},
		{"assignment", bash("D=~/.pi//agent; cp evil.json $D/settings.json")},
		{"redirection >", bash("echo {} > ~/.pi//agent/settings.json")},
		{"redirection >>", bash("echo {} >> ~/.pi//agent/settings.json")},
		{"redirection, relative", Query{Surface: "bash", MatchValues: []string{"echo {} > .pi/agent/settings.json"}, Cwd: testHome}},
		{"in a command substitution", bash("echo $(cp evil.json ~/.pi//agent/settings.json)")},
		{"as an asking unit only", Query{Surface: "bash", MatchValues: []string{"ls"}, AskingUnits: []AskingUnit{{Command: "ls"}, {Command: "cp evil.json ~/.pi//agent/settings.json"}}}},
		{"moving the agent directory away", bash("mv ~/.pi /tmp/p")},
		{"removing an ancestor", bash("rm -rf ~/.pi")},
		// Path surfaces.
		{"path glob ?", Query{Surface: "path_write", MatchValues: []string{testHome + "/.p?/agent/settings.json"}}},
		{"path glob *", Query{Surface: "path_write", MatchValues: []string{"/home/*/.pi/agent/settings.json"}}},
		{"path double slash", Query{Surface: "path_write", MatchValues: []string{testHome + "/.pi//agent/settings.json"}}},
		// A tool's input.
		{"tool input double slash", Query{Surface: "mcp_fs_write", MatchValues: []string{`{"path":"/home/ada/.pi//agent/settings.json"}`}}},
		{"tool input dot-dot", Query{Surface: "mcp_fs_write", MatchValues: []string{`{"path":"/home/ada/x/../.pi/agent/settings.json"}`}}},
		{"tool input escaped slashes", Query{Surface: "mcp_fs_write", MatchValues: []string{`{"path":"\/home\/ada\/.pi\/agent\/settings.json"}`}}},
		// The broker's own files, wherever they are.
		{"the review log", Query{Surface: "path_write", MatchValues: []string{reviewLogFile}}},
		{"the review log from bash", bash("truncate -s 0 /var/lib/courier//review.jsonl")},
		{"the broker's config", Query{Surface: "path_write", MatchValues: []string{brokerConfig}}},
		{"the broker's config from bash", bash(`sed -i 's/deny/allow/' /etc/courier/./config.json`)},
		{"a grants journal", Query{Surface: "path_write", MatchValues: []string{grantsJournals + "/broker/parent.json"}}},
		{"a grants journal from bash", bash(`echo '{"version":1,"grants":[{"surface":"bash","pattern":"*"}]}' > /srv/mailbox/.courier/grants/broker/parent.json`)},
		{"pi's settings.json", Query{Surface: "path_write", MatchValues: []string{strings.Replace(settings, "~", testHome, 1)}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := p.Resolve(tt.q)
			if d.Action != Deny || d.Origin != OriginBuiltin || !strings.HasPrefix(d.Reason, GuardReason+": ") {
				t.Errorf("got %v %q, want a built-in deny", d, d.Reason)
			}
		})
	}
}

// TestGuardLeavesOrdinaryWorkAlone: the wider guard must not deny what
// never touches a protected tree.
func TestGuardLeavesOrdinaryWorkAlone(t *testing.T) {
	p := bypassPolicy(t)
	for _, q := range []Query{
		{Surface: "bash", MatchValues: []string{"ls ~"}},
		{Surface: "bash", MatchValues: []string{"ls ~/*"}},
		{Surface: "bash", MatchValues: []string{"du -sh ~/.*"}},
		{Surface: "bash", MatchValues: []string{"cp a.txt /tmp/b.txt"}},
		{Surface: "bash", MatchValues: []string{"rm -rf build/*"}, Cwd: testHome + "/work"},
		{Surface: "bash", MatchValues: []string{"echo $HOME > out.txt"}, Cwd: testHome + "/work"},
		{Surface: "bash", MatchValues: []string{"cd /tmp && cp a b"}},
		{Surface: "bash", MatchValues: []string{"git status"}, Cwd: testHome + "/work"},
		{Surface: "bash", MatchValues: []string{"cat ~/.pi/notes.md"}},
		{Surface: "bash", MatchValues: []string{"mv a.txt b.txt"}, Cwd: testHome + "/work"},
		{Surface: "path_write", MatchValues: []string{testHome + "/work/main.go"}},
		{Surface: "path_write", MatchValues: []string{"/var/lib/courier/review.jsonl.bak"}},
		{Surface: "mcp_fs_write", MatchValues: []string{`{"path":"/home/ada/work/x"}`}},
	} {
		if d := p.Resolve(q); d.Origin == OriginBuiltin {
			t.Errorf("%+v denied by the guard: %s", q, d.Reason)
		}
	}
}

// FuzzGuardWords: whatever the line, judging it never panics, and a line
// with a word that names a path inside the agent directory, however it is
// spelled (`//`, `./`, `..`, quotes), is denied by the built-in rule.
func FuzzGuardWords(f *testing.F) {
	for _, s := range []string{
		"cp x ~/.pi//agent/a", "ls ~/*", "cd ~/.pi && cp x agent/y", "echo {} > $HOME/.pi/./agent/z",
		"mv ~/.pi /tmp/p", "dd of=~/.pi/agent/x", "cp x /home/ada/.p?/agent/x", "cp x ~/.pi/{agent,b}/x",
		"cp x \"$PI_CODING_AGENT_DIR\"/x", "git status", "rm -rf build/*", "echo [", "cp x /home/ada/.pi/[",
	} {
		f.Add(s, "/home/ada/work")
	}
	p := bypassPolicy(f)
	f.Fuzz(func(t *testing.T, line, cwd string) {
		q := Query{Surface: "bash", MatchValues: []string{line}, Cwd: cwd}
		d := p.Resolve(q)
		for _, u := range bashunits.Split(line) {
			for _, w := range u.Words {
				if !strings.HasPrefix(w, "/") {
					continue
				}
				if c := path.Clean(w); strings.HasPrefix(c, agentDir+"/") && d.Origin != OriginBuiltin {
					t.Fatalf("%q: the word %q names %q, but the answer is %v", line, w, c, d)
				}
			}
		}
	})
}

// TestGuardMovesExplained: a move of a protected tree's ancestor is denied
// after the rules, unless a rule denied it first, and Explain says so.
func TestGuardMovesExplained(t *testing.T) {
	p := bypassPolicy(t)
	e := p.Explain(Query{Surface: "bash", MatchValues: []string{"mv ~/.pi /tmp/p"}})
	if e.Action != Deny || e.Rule.Origin != OriginBuiltin || !slices.ContainsFunc(e.Notes, func(n string) bool { return strings.Contains(n, "moves, removes or re-permissions") }) {
		t.Errorf("explanation %+v", e)
	}
	// The default rules deny `rm -rf ~` themselves: their reason stands.
	d := mustPolicy(t, string(DefaultConfigJSON()), Options{Protected: []string{agentDir}}).Resolve(Query{Surface: "bash", MatchValues: []string{"rm -rf ~"}})
	if d.Action != Deny || d.Origin != OriginGlobal || *d.Pattern != "rm -rf ~*" {
		t.Errorf("rm -rf ~: %v", d)
	}
}
