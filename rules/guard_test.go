package rules

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const (
	agentDir    = testHome + "/.pi/agent"
	mailboxRoot = agentDir + "/sessions/permission-forwarding"
)

// A config that would allow everything, under yolo, with a session grant
// covering every path: the guard must still deny.
const permissiveConfig = `{"yoloMode": true, "permission": {"*": "allow", "bash": "allow", "path": "allow", "write": "allow"}}`

func guardedPolicy(t *testing.T) *Policy {
	t.Helper()
	p := mustPolicy(t, permissiveConfig, Options{Protected: []string{mailboxRoot, "~/.pi/agent"}})
	if _, err := p.Sessions().Record(WidthFamily, SessionGrant{Surface: "path_write", Pattern: "*"}, SessionGrant{Surface: "bash", Pattern: "*"}); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestSelfApprovalGuard(t *testing.T) {
	p := guardedPolicy(t)
	response := mailboxRoot + "/sessions/parent/responses/perm-1.json"
	boundary := response
	tests := []struct {
		name string
		q    Query
		deny bool
	}{
		{"write a response file", Query{Surface: "path_write", MatchValues: []string{response}}, true},
		{"bare path family", Query{Surface: "path", MatchValues: []string{response}}, true},
		{"the root itself", Query{Surface: "path_write", MatchValues: []string{mailboxRoot}}, true},
		{"uncleaned path", Query{Surface: "path_write", MatchValues: []string{testHome + "/work/../.pi/agent/x"}}, true},
		{"~-prefixed value", Query{Surface: "path_write", MatchValues: []string{"~/.pi/agent/sessions/permission-forwarding/x.json"}}, true},
		{"relative value placed in cwd", Query{Surface: "path_write", MatchValues: []string{"../.pi/agent/config.json"}, Cwd: testHome + "/work"}, true},
		{"relative value without cwd entering the tree", Query{Surface: "path_write", MatchValues: []string{"../.pi/agent/config.json"}}, true},
		{"relative value without cwd elsewhere", Query{Surface: "path_write", MatchValues: []string{"src/main.go"}}, false},
		{"only the boundary value inside", Query{Surface: "path_write", MatchValues: []string{"link/x.json"}, BoundaryValue: &boundary}, true},
		{"a path-bearing tool", Query{Surface: "write", MatchValues: []string{response}}, true},
		{"external directory", Query{Surface: "external_directory_write", MatchValues: []string{agentDir + "/settings.json"}}, true},
		{"a sibling with the same prefix is outside", Query{Surface: "path_write", MatchValues: []string{testHome + "/.pi/agent-backup/x"}}, false},
		{"elsewhere", Query{Surface: "path_write", MatchValues: []string{testHome + "/work/main.go"}}, false},
		{"bash with the absolute path", Query{Surface: "bash", MatchValues: []string{"echo '{}' > " + response}}, true},
		{"bash with ~/", Query{Surface: "bash", MatchValues: []string{"cp x ~/.pi/agent/sessions/permission-forwarding/sessions/p/responses/a.json"}}, true},
		{"bash with $HOME", Query{Surface: "bash", MatchValues: []string{`mv x "$HOME/.pi/agent/settings.json"`}}, true},
		{"bash with ${HOME}", Query{Surface: "bash", MatchValues: []string{`rm -rf ${HOME}/.pi/agent`}}, true},
		{"an asking unit", Query{Surface: "bash", MatchValues: []string{"ls"}, AskingUnits: []AskingUnit{{Command: "ls"}, {Command: "tee " + response}}}, true},
		{"a tool argument", Query{Surface: "mcp_fs_write", MatchValues: []string{`{"path":"` + response + `"}`}}, true},
		{"bash elsewhere", Query{Surface: "bash", MatchValues: []string{"go test ./..."}}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := p.Resolve(tt.q)
			if !tt.deny {
				if d.Origin == OriginBuiltin {
					t.Errorf("denied by the guard: %s", d.Reason)
				}
				return
			}
			if d.Action != Deny || d.Origin != OriginBuiltin || !strings.HasPrefix(d.Reason, GuardReason+": ") {
				t.Fatalf("got %v %q, want a built-in deny", d, d.Reason)
			}
			src, _ := d.DecidedBy().MarshalJSON()
			if !strings.HasPrefix(string(src), `{"kind":"rule","surface":"`+tt.q.Surface+`","pattern":"`) || !strings.HasSuffix(string(src), `","origin":"builtin"}`) {
				t.Errorf("decidedBy %s", src)
			}
		})
	}
}

func TestGuardExplain(t *testing.T) {
	p := guardedPolicy(t)
	e := p.Explain(Query{Surface: "path_write", MatchValues: []string{mailboxRoot + "/x"}})
	if e.Action != Deny || e.Rule.Origin != OriginBuiltin || len(e.Steps) != 0 || len(e.Notes) != 1 {
		t.Errorf("explanation %+v", e)
	}
}

// The child sends canonical paths; a protected path given through a
// symbolic link must still catch them.
func TestGuardResolvesSymlinks(t *testing.T) {
	dir := t.TempDir()
	real := filepath.Join(dir, "real-home")
	if err := os.MkdirAll(filepath.Join(real, ".pi", "agent"), 0o700); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "home")
	if err := os.Symlink(real, link); err != nil {
		t.Skip("no symlinks here:", err)
	}
	realPath, err := filepath.EvalSymlinks(real) // the temp dir itself may be behind a link
	if err != nil {
		t.Fatal(err)
	}
	p := mustPolicy(t, permissiveConfig, Options{Home: link, Protected: []string{filepath.Join(link, ".pi", "agent", "sessions", "permission-forwarding")}})
	canonical := filepath.Join(realPath, ".pi", "agent", "sessions", "permission-forwarding", "sessions", "p", "responses", "x.json")
	if d := p.Resolve(Query{Surface: "path_write", MatchValues: []string{canonical}}); d.Origin != OriginBuiltin {
		t.Errorf("canonical spelling not guarded: %v", d)
	}
}

func TestGuardRefusesRelativeProtectedPath(t *testing.T) {
	cfg, err := Load("")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := NewPolicy(cfg, Options{Home: testHome, Protected: []string{"sessions/permission-forwarding"}}); err == nil {
		t.Error("a relative protected path must be refused")
	}
}
