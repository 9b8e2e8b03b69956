package rules

import (
	"strings"
	"testing"
)

// reviewPolicy is the adversarial review's setup: the config asks, and
// session grants for the commands an attacker would use allow; only the
// guard stands between them and the protected trees.
func reviewPolicy(t testing.TB, protected ...string) *Policy {
	t.Helper()
	if protected == nil {
		protected = []string{mailboxRoot, agentDir, reviewLogFile, brokerConfig, grantsJournals}
	}
	p := mustPolicy(t, `{"permission": {"*": "ask", "bash": "allow"}}`, Options{Protected: protected})
	if _, err := p.Sessions().Record(WidthProven, SessionGrant{Surface: "bash", Pattern: "*"}, SessionGrant{Surface: "path_write", Pattern: "*"}, SessionGrant{Surface: "mcp_fs_write", Pattern: "*"}); err != nil {
		t.Fatal(err)
	}
	return p
}

func guardDenies(d Resolution) bool {
	return d.Action == Deny && d.Origin == OriginBuiltin && strings.HasPrefix(d.Reason, GuardReason+": ")
}

// TestGuardReviewAttacks: findings 1–3 of the issue 14 review, each line a
// write into the agent directory or the broker's files that the guard let
// through. Each must be denied by the built-in rule.
func TestGuardReviewAttacks(t *testing.T) {
	p := reviewPolicy(t)
	const cwd = "/work/proj"
	tests := []struct {
		finding, line string
	}{
		// Finding 1: words bash decodes that the guard did not.
		{"1 ansi-c", `echo '{}' > ~/.pi/$'agent'/settings.json`},
		{"1 ansi-c hex", `echo '{}' > ~/.pi/$'\x61'gent/auth.json`},
		{"1 ansi-c octal", `cp evil ~/.pi/$'\141'gent/settings.json`},
		{"1 ansi-c whole", `cp evil $'\x2fhome/ada/.pi/agent/settings.json'`},
		{"1 locale quote", `cp evil /home/ada/.pi/$"agent"/settings.json`},
		{"1 ~user unknown", `cp evil.json ~nosuchuser-courier/.pi/agent/settings.json`},
		{"1 /proc/self/root", `cp evil.json /proc/self/root/home/ada/.pi/./agent/settings.json`},
		{"1 /proc/pid/root", `cp evil.json /proc/1/root/home/ada/.pi/agent/settings.json`},
		{"1 /proc/thread-self/root", `cp evil.json /proc/thread-self/root/var/lib/courier/review.jsonl`},
		{"1 /proc/self/cwd", `cp evil /proc/self/cwd/../../home/ada/.pi/agent/settings.json`},
		{"1 /dev/fd", `cp evil /dev/fd/3`},
		// Finding 2: expansions inside a word, unknown cd targets.
		{"2 loop variable", `for a in .pi; do cp evil ~/$a/agent/settings.json; done`},
		{"2 command substitution", `cp evil ~/$(echo .pi)/agent/settings.json`},
		{"2 backticks", "cp evil ~/.pi/agen`true`t/settings.json"},
		{"2 braced parameter", `cp evil.json /home/ada/.pi/${x}agent/settings.json`},
		{"2 arithmetic", `cp evil.json /home/ada/.pi/agent$((0))/settings.json`},
		{"2 computed target", `cp evil $(cat path.txt)`},
		{"2 computed redirection", `echo x > "$OUT"`},
		{"2 cd glob", `cd ~/.p[i] && cp evil agent/settings.json`},
		{"2 cd glob ?", `cd ~/.p? && cp evil agent/settings.json`},
		{"2 CDPATH", `export CDPATH=~/.pi; cd agent; cp evil settings.json`},
		{"2 cd expansion", `cd "$D" && cp evil settings.json`},
		{"2 cd -", `cd - && cp evil settings.json`},
		{"2 ~+", `cd ~/.pi && cp evil ~+/agent/settings.json`},
		{"2 ~-", `cp evil ~-/settings.json`},
		// Finding 3: writes into an ancestor of a protected tree.
		{"3 cp -r into the parent", `cp -r agent ~/.pi/`},
		{"3 cp -r into the parent, no slash", `cp -r agent /home/ada/.pi`},
		{"3 tar -C", `tar -C ~/.pi -xf evil.tar`},
		{"3 tar -C last", `tar -xf x -C /home/ada`},
		{"3 tar bundled", `tar xzf x.tgz --directory=/home/ada`},
		{"3 unzip -d", `unzip -o x.zip -d ~/.pi`},
		{"3 git -C", `git -C ~/.pi apply p`},
		{"3 patch -d", `patch -d ~/.pi -p0 -i evil.patch`},
		{"3 cp into the log's directory", `cp review.jsonl /var/lib/courier/`},
		{"3 cp -t", `cp -t /var/lib/courier review.jsonl`},
		{"3 cp --target-directory", `cp --target-directory=/etc/courier config.json`},
		{"3 mv into the parent", `mv agent ~/.pi`},
		{"3 install into the parent", `install -m 600 settings.json ~/.pi/agent`},
		{"3 cpio", `cpio -i -D ~/.pi < a.cpio`},
		{"3 7z", `7z x a.7z -o/home/ada/.pi`},
		{"3 bsdtar", `bsdtar -x -f a.tar -C /home/ada`},
		{"3 symlink target beside the link", `ln -s ../home /tmp/h`},
		{"3 symlink target, -t", `ln -s -t /tmp ../home/ada/.pi`},
	}
	for _, tt := range tests {
		t.Run(tt.finding, func(t *testing.T) {
			if d := p.Resolve(Query{Surface: "bash", MatchValues: []string{tt.line}, Cwd: cwd}); !guardDenies(d) {
				t.Errorf("%q: got %v %q, want a built-in deny", tt.line, d, d.Reason)
			}
		})
	}
}

// TestGuardReviewPathSpellings: the same spellings on a path surface and
// in a tool's input.
func TestGuardReviewPathSpellings(t *testing.T) {
	p := reviewPolicy(t)
	for _, q := range []Query{
		{Surface: "path_write", MatchValues: []string{"~nosuchuser-courier/.pi/agent/settings.json"}, Cwd: "/work/proj"},
		{Surface: "path_write", MatchValues: []string{"/proc/self/root/home/ada/.pi/agent/settings.json"}},
		{Surface: "path_write", MatchValues: []string{".pi/agent/settings.json"}},
		{Surface: "path_write", MatchValues: []string{".pi/agent/settings.json"}, Cwd: "relative"},
		{Surface: "mcp_fs_write", MatchValues: []string{`{"path":"/home/ada/.pi\u002fagent/settings.json"}`}},
	} {
		if d := p.Resolve(q); !guardDenies(d) {
			t.Errorf("%+v: got %v, want a built-in deny", q, d)
		}
	}
}

// TestGuardReviewOrdinaryWork: what the wider guard must still allow
// (finding 13's false positives among them).
func TestGuardReviewOrdinaryWork(t *testing.T) {
	p := reviewPolicy(t, mailboxRoot, agentDir, "/work/proj/courier.json", "/work/proj/review.jsonl")
	tests := []struct{ cwd, line string }{
		{"/work/app", "cp a.txt b.txt"},
		{"/work/app", "tar -xf x.tar"},
		{"/work/app", "mv build dist"},
		{"/work/app", "cp -r src /tmp/backup"},
		{"/work/app", "cat $F"},
		{"/work/app", `grep -r "$PATTERN" .`},
		{"/work/app", "for f in *.go; do gofmt -l $f; done"},
		{"/work/app", "cd $(git rev-parse --show-toplevel) && git status"},
		{"/work/app", "unzip -l x.zip"},
		{"/work/app", "ln -s ../shared lib"},
		{"/work/app", "cp x ~/notes/"},
		{agentDir + "/extensions/my-ext", "git status"},
		{agentDir + "/extensions/my-ext", "npm test"},
		{agentDir + "/extensions/my-ext", "ls -la src"},
		{"/work/proj", "git commit -am fix"},
		{"/work/proj", "git add -A"},
		{"/work/proj", "npm test"},
		{"/work/proj", "rm -rf node_modules"},
		{"/work/proj", "grep -r courier.json ."},
		{"/work/proj", "cat review.jsonl"},
	}
	for _, tt := range tests {
		if d := p.Resolve(Query{Surface: "bash", MatchValues: []string{tt.line}, Cwd: tt.cwd}); d.Origin == OriginBuiltin {
			t.Errorf("cwd %s, %q: denied by the guard: %s", tt.cwd, tt.line, d.Reason)
		}
	}
	// Still denied: writes there, and reads of the mailbox from inside it.
	for _, tt := range []struct{ cwd, line string }{
		{agentDir + "/extensions/my-ext", "echo x > ../../settings.json"},
		{agentDir, "tee settings.json"},
		{mailboxRoot, "cat sessions/p/responses/perm-1.json"},
		{"/work/proj", "cp evil courier.json"},
		{"/work/proj", "echo > review.jsonl"},
	} {
		if d := p.Resolve(Query{Surface: "bash", MatchValues: []string{tt.line}, Cwd: tt.cwd}); !guardDenies(d) {
			t.Errorf("cwd %s, %q: got %v, want a built-in deny", tt.cwd, tt.line, d)
		}
	}
}
