package agenthook

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/seed6639df8c/courier/decision"
	"github.com/seed6639df8c/courier/rules"
	"github.com/seed6639df8c/courier/wire"
)

// projectPolicy allows reading and writing under work, and MCP server
// a's tools; everything else asks. The attacks below must not ride that
// allow to a place outside work.
func projectPolicy(t *testing.T, work, home string, protected ...string) *rules.Policy {
	t.Helper()
	cfg, err := rules.Parse("project.json", []byte(`{"permission": {"*": "ask",
		"path_write": {"*": "ask", "`+work+`/*": "allow"},
		"path_read": {"*": "ask", "`+work+`/*": "allow"},
		"mcp": {"*": "ask", "a:*": "allow"},
		"bash": {"*": "ask", "rm *": "allow"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	p, err := rules.NewPolicy(cfg, rules.Options{Home: home, Protected: protected})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestPathsNeverNarrowerThanTheWrite: a path the tool may read another way
// than the hook's lexical join with cwd is asked for in every reading, each
// with its links resolved, so a rule for the project does not allow a write
// that lands outside it.
func TestPathsNeverNarrowerThanTheWrite(t *testing.T) {
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	work, home, secret := filepath.Join(root, "work"), filepath.Join(root, "home"), filepath.Join(root, "secret")
	deep := filepath.Join(work, "a", "b", "c")
	for _, d := range []string{deep, filepath.Join(home, ".ssh"), filepath.Join(secret, "sub")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for link, target := range map[string]string{
		"link":    secret,                            // a linked directory
		"sublink": filepath.Join(secret, "sub"),      // `..` after it climbs into secret
		"dangle":  filepath.Join(secret, "new-file"), // a link to a file not there yet
		"loop":    filepath.Join(work, "loop"),
		"a/b/c/l": filepath.Join(secret, "sub"), // `l/..` is secret
	} {
		if err := os.Symlink(target, filepath.Join(work, link)); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("HOME", home)
	p := projectPolicy(t, work, home)
	write := func(path string) map[string]any {
		return map[string]any{"tool_name": "Write", "tool_input": map[string]any{"file_path": path, "content": "x"}}
	}
	patch := func(path string) map[string]any {
		return map[string]any{"tool_name": "apply_patch", "tool_input": map[string]any{"command": "*** Begin Patch\n*** Add File: " + path + "\n+x\n*** End Patch\n"}}
	}
	tests := []struct {
		name  string
		set   map[string]any
		allow bool
	}{
		{"a file in the project", write(work + "/ok.txt"), true},
		{"a new file in a new directory", write(work + "/new-dir/x"), true},
		{"~ that Claude Code expands", write("~/.bashrc"), false},
		{"a new file in a linked directory", write(work + "/link/new"), false},
		{"a dangling link", write(work + "/dangle"), false},
		{"`..` after a link", write(work + "/sublink/../x"), false},
		{"a link loop", write(work + "/loop/x"), false},
		{"Read through a linked directory", map[string]any{"tool_name": "Read", "tool_input": map[string]any{"file_path": work + "/link/x"}}, false},
		{"Grep in ~", map[string]any{"tool_name": "Grep", "tool_input": map[string]any{"path": "~/.ssh", "pattern": "."}}, false},
		{"Grep in a linked directory", map[string]any{"tool_name": "Grep", "tool_input": map[string]any{"path": "link", "pattern": "."}}, false},
		{"Glob through a linked directory", map[string]any{"tool_name": "Glob", "tool_input": map[string]any{"pattern": "link/*.key"}}, false},
		{"Glob climbing after a wildcard", map[string]any{"tool_name": "Glob", "tool_input": map[string]any{"path": deep, "pattern": "*/../*.key"}}, false},
		{"Glob in the project", map[string]any{"tool_name": "Glob", "tool_input": map[string]any{"path": deep, "pattern": "*/*.key"}}, true},
		{"a patch through a linked directory", patch(work + "/link/x"), false},
		{"a patch's absolute path in the project", patch(work + "/ok.txt"), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.set["cwd"] = work
			f := &policyForwarder{p: p}
			res := testHook(ClaudeCode, f).Handle(context.Background(), event(t, tt.set))
			if got := res.Answer.Verdict == VerdictAllow; got != tt.allow {
				t.Errorf("allowed %v, want %v: %s", got, tt.allow, res.Diag)
				for _, r := range f.requests {
					t.Logf("asked %s %q boundary %v", r.AccessIntent.Surface, r.AccessIntent.MatchValues, r.AccessIntent.BoundaryValue)
				}
			}
		})
	}
}

// TestCodexPatchRelativePathsNeverRuleAllowed: Codex resolves a patch's
// relative paths in the applying call's workdir, which the event does not
// carry; a rule for the event's cwd must not allow them (the floor).
func TestCodexPatchRelativePathsNeverRuleAllowed(t *testing.T) {
	p := projectPolicy(t, "/case/work", "/home/ada")
	for _, path := range []string{"src/x.go", "../work/x.go"} {
		f := &policyForwarder{p: p}
		data := event(t, map[string]any{"cwd": "/case/work", "tool_name": "apply_patch", "tool_input": map[string]any{"command": "*** Begin Patch\n*** Add File: " + path + "\n+x\n*** End Patch\n"}})
		res := testHook(Codex, f).Handle(context.Background(), data)
		if res.Answer.Verdict == VerdictAllow || len(f.requests) == 0 || f.requests[0].AccessIntent.Floor != FloorUnplacedPatchPath {
			t.Errorf("%s: verdict %v, requests %d: want no allow, the floor sent", path, res.Answer.Verdict, len(f.requests))
		}
	}
}

// TestCodexBashCwdIsNotTrusted: Codex runs a command in exec_command's
// workdir, not the event's cwd; a relative path the broker's guard would
// place in the event's cwd could be the mailbox. The cwd is sent as
// unknown, and the guard denies what it could be.
func TestCodexBashCwdIsNotTrusted(t *testing.T) {
	mailbox := "/home/ada/.pi/agent/sessions/permission-forwarding"
	p := projectPolicy(t, "/case/work", "/home/ada", mailbox)
	data := event(t, map[string]any{"cwd": "/case/work", "tool_input": map[string]any{"command": "rm -rf sessions/permission-forwarding"}})
	f := &policyForwarder{p: p}
	res := testHook(Codex, f).Handle(context.Background(), data)
	if res.Answer.Verdict != VerdictDeny || !strings.Contains(res.Answer.Message, "built-in") {
		t.Errorf("Codex: %+v, want the self-approval guard's deny", res.Answer)
	}
	if cwd := f.requests[0].AccessIntent.RequesterCwd; cwd != "" {
		t.Errorf("Codex: requesterCwd %q, want none", cwd)
	}
	// Claude Code runs Bash in the session's cwd, the event's.
	f = &policyForwarder{p: p}
	testHook(ClaudeCode, f).Handle(context.Background(), data)
	if cwd := f.requests[0].AccessIntent.RequesterCwd; cwd != "/case/work" {
		t.Errorf("Claude Code: requesterCwd %q, want the event's", cwd)
	}
}

// TestToolNameSpellingsRefused: a name that reads as a tool the adapter
// maps, or as one of courier's surfaces, in another spelling is refused,
// not asked for on a surface of that name.
func TestToolNameSpellingsRefused(t *testing.T) {
	for _, name := range []string{"bash", "BASH", "Bash ", " Bash", "read", "WRITE", "Apply_Patch", "path_write", "Path_Read", "mcp", "web_fetch", "Mcp__a__b", "mcp__", "mcp__a", "mcp__a__", "Bash\n", "Fro'b", strings.Repeat("x", 200)} {
		s := &stub{answers: []decision.Decision{decision.Allow(allowRule)}}
		res := testHook(ClaudeCode, s).Handle(context.Background(), event(t, map[string]any{"tool_name": name, "tool_input": map[string]any{"command": "git push --force origin main"}}))
		if res.Answer.Verdict != VerdictNone || len(s.requests) != 0 || !strings.Contains(res.Diag, "tool_name") {
			t.Errorf("%q: verdict %v after %d asks (%s), want refused", name, res.Answer.Verdict, len(s.requests), res.Diag)
		}
	}
	s := &stub{answers: []decision.Decision{decision.Allow(allowRule)}}
	res := testHook(ClaudeCode, s).Handle(context.Background(), event(t, map[string]any{"tool_name": "TodoWrite", "tool_input": map[string]any{"todos": []any{}}}))
	if res.Answer.Verdict != VerdictAllow || len(s.requests) != 1 || s.requests[0].AccessIntent.Surface != "TodoWrite" {
		t.Errorf("an unknown tool: verdict %v, want asked on its own surface", res.Answer.Verdict)
	}
}

// TestMCPNameReadEveryWay: mcp__a__b__c is server a's tool b__c or server
// a__b's tool c; an allow for server a must not allow it.
func TestMCPNameReadEveryWay(t *testing.T) {
	f := &policyForwarder{p: projectPolicy(t, "/case/work", "/home/ada")}
	res := testHook(ClaudeCode, f).Handle(context.Background(), event(t, map[string]any{"tool_name": "mcp__a__b__c", "tool_input": map[string]any{}}))
	if res.Answer.Verdict == VerdictAllow {
		t.Errorf("allowed by a rule for one reading: %s", res.Diag)
	}
	if mv := f.requests[0].AccessIntent.MatchValues; !slices.Equal(mv, []string{"a:b__c", "a__b:c"}) {
		t.Errorf("match values %q, want both readings", mv)
	}
}

// panicker is a Forwarder with a bug.
type panicker struct{}

func (panicker) Forward(context.Context, wire.Request) decision.Decision { panic("a bug") }
func (panicker) LogLocal(wire.Request, decision.Decision)                {}

// TestPanicNeverAllows: a panic while asking is an ask nobody answered.
func TestPanicNeverAllows(t *testing.T) {
	for _, mode := range []UnavailableMode{UnavailableNone, UnavailableDeny} {
		h := testHook(Codex, panicker{})
		h.Unavailable = mode
		res := h.Handle(context.Background(), readEvent(t, "codex_sub_permissionrequest"))
		want := VerdictNone
		if mode == UnavailableDeny {
			want = VerdictDeny
		}
		if res.Answer.Verdict != want || !strings.Contains(res.Diag, "a bug") {
			t.Errorf("mode %v: %+v, want %v naming the failure", mode, res, want)
		}
	}
}

// TestNoAskAfterTheDeadline: once the hook's time is up, no request is
// written for a broker to answer nobody.
func TestNoAskAfterTheDeadline(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	s := &stub{answers: []decision.Decision{decision.Allow(allowRule)}}
	res := testHook(Codex, s).Handle(ctx, readEvent(t, "tool_apply_patch"))
	if res.Answer.Verdict != VerdictNone || len(s.requests) != 0 {
		t.Errorf("verdict %v after %d asks, want none after none", res.Answer.Verdict, len(s.requests))
	}
}

// TestOversizedNamesAndPathsRefused: a tool name longer than any agent's
// and a path longer than PATH_MAX are refused before they are read every
// way: an mcp__ name splits at each "__" (32 KiB of underscores made a
// gigabyte of readings), and a path is resolved a component at a time,
// each joined to the whole prefix (32 KiB of `/a` took 2.7 s). The
// subagent that sends them gets no ask and no allow.
func TestOversizedNamesAndPathsRefused(t *testing.T) {
	long := strings.Repeat("/a", 2100) // 4,200 bytes
	for _, tc := range []struct {
		name  string
		event map[string]any
		diag  string
	}{
		{"an MCP name", map[string]any{"tool_name": "mcp__" + strings.Repeat("a__", 50) + "b", "tool_input": map[string]any{}}, "tool_name"},
		{"a Read", map[string]any{"tool_name": "Read", "tool_input": map[string]any{"file_path": long}}, "PATH_MAX"},
		{"a Write", map[string]any{"tool_name": "Write", "tool_input": map[string]any{"file_path": "/case/work" + long, "content": "x"}}, "PATH_MAX"},
	} {
		s := &stub{answers: []decision.Decision{decision.Allow(allowRule)}}
		res := testHook(ClaudeCode, s).Handle(context.Background(), event(t, tc.event))
		if res.Answer.Verdict != VerdictNone || len(s.requests) != 0 || !strings.Contains(res.Diag, tc.diag) {
			t.Errorf("%s: verdict %v after %d asks (%s), want refused naming %s", tc.name, res.Answer.Verdict, len(s.requests), res.Diag, tc.diag)
		}
	}
}
