package agenthook

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/seed6639df8c/courier/decision"
	"github.com/seed6639df8c/courier/rules"
	"github.com/seed6639df8c/courier/wire"
)

// event builds a Claude Code subagent PermissionRequest with fields
// replaced or added (a nil value removes the field).
func event(t *testing.T, set map[string]any) []byte {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(readEvent(t, "claude_sub_permissionrequest"), &m); err != nil {
		t.Fatal(err)
	}
	for k, v := range set {
		if v == nil {
			delete(m, k)
			continue
		}
		m[k] = v
	}
	data, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// defaultPolicy is the broker's embedded rules, with the home the
// requests assume.
func defaultPolicy(t *testing.T) *rules.Policy {
	t.Helper()
	cfg, err := rules.Parse("default.json", rules.DefaultConfigJSON())
	if err != nil {
		t.Fatal(err)
	}
	p, err := rules.NewPolicy(cfg, rules.Options{Home: "/home/ada"})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// policyForwarder answers with the broker's default rules: an allow or a
// deny where a rule decides, a user's allow where one would be asked (the
// most an attacker could hope for at the prompt is that it looks benign).
type policyForwarder struct {
	p        *rules.Policy
	requests []wire.Request
	resolved []rules.Resolution
}

func (f *policyForwarder) Forward(_ context.Context, req wire.Request) decision.Decision {
	f.requests = append(f.requests, req)
	r := f.p.Resolve(rules.QueryFromIntent(req.AccessIntent))
	f.resolved = append(f.resolved, r)
	switch r.Action {
	case rules.Allow:
		return decision.Allow(r.DecidedBy())
	case rules.Deny:
		return decision.Deny(r.Reason, r.DecidedBy())
	}
	return decision.NobodyAnswered("asked")
}

func (f *policyForwarder) LogLocal(wire.Request, decision.Decision) {}

// TestAttacksNeverAllow: events built to slip past the adapter. None may
// allow, whatever the broker would answer for what the adapter asked.
func TestAttacksNeverAllow(t *testing.T) {
	t.Setenv("HOME", "/home/ada")
	allowAll := decision.Allow(allowRule)
	huge := strings.Repeat("a", MaxEventSize)
	tests := []struct {
		name string
		data []byte
		// byRules forwards to the default rules instead of a broker that
		// allows everything it is asked: the attack hides in the ask.
		byRules bool
	}{
		{"agent_id escaping the mailbox", event(t, map[string]any{"agent_id": "../x"}), false},
		{"agent_id a root", event(t, map[string]any{"agent_id": "/"}), false},
		{"agent_id dot-dot", event(t, map[string]any{"agent_id": ".."}), false},
		{"agent_id very long", event(t, map[string]any{"agent_id": strings.Repeat("a", 300)}), false},
		{"agent_id with NUL", event(t, map[string]any{"agent_id": "a\x00b"}), false},
		{"agent_id empty", event(t, map[string]any{"agent_id": ""}), false},
		{"agent_id unknown placeholder", event(t, map[string]any{"agent_id": "unknown"}), false},
		{"agent_id not a string", event(t, map[string]any{"agent_id": 7}), false},
		{"command padded", event(t, map[string]any{"tool_input": map[string]any{"command": "  git   push \t--force  origin main  "}}), true},
		{"command split by a line continuation", event(t, map[string]any{"tool_input": map[string]any{"command": "git push \\\n--force origin main"}}), true},
		{"command after a harmless one", event(t, map[string]any{"tool_input": map[string]any{"command": "git status && git push --force origin main"}}), true},
		{"command in a substitution", event(t, map[string]any{"tool_input": map[string]any{"command": "echo $(git push --force origin main)"}}), true},
		{"command on a second line", event(t, map[string]any{"tool_input": map[string]any{"command": "git status\ngit push --force origin main"}}), true},
		{"command after a semicolon", event(t, map[string]any{"tool_input": map[string]any{"command": "git status; rm -rf ~"}}), true},
		{"harmless command piped to a shell", event(t, map[string]any{"tool_input": map[string]any{"command": "git status | sh"}}), true},
		{"harmless command redirected over a dotfile", event(t, map[string]any{"tool_input": map[string]any{"command": "git status > ~/.bashrc"}}), true},
		{"look-alike letter in an allowed command", event(t, map[string]any{"tool_input": map[string]any{"command": "g\u0456t status"}}), true},
		{"huge input", []byte(`{"hook_event_name":"PermissionRequest","agent_id":"a1","cwd":"/w","tool_name":"Bash","tool_input":{"command":"ls","pad":"` + huge + `"}}`), false},
		{"patch hiding a move", event(t, map[string]any{"tool_name": "apply_patch", "tool_input": map[string]any{"command": "*** Begin Patch\n*** Update File: a\n*** Move to: ~/.ssh/authorized_keys\n@@\n-x\n+y\n*** End Patch\n"}}), true},
		{"patch with an unknown header", event(t, map[string]any{"tool_name": "apply_patch", "tool_input": map[string]any{"command": "*** Begin Patch\n*** Update File: a\n***Move to: /etc/x\n*** End Patch\n"}}), false},
		{"patch without its frame", event(t, map[string]any{"tool_name": "apply_patch", "tool_input": map[string]any{"command": "*** Add File: a\n+x\n"}}), false},
		{"patch naming no file", event(t, map[string]any{"tool_name": "apply_patch", "tool_input": map[string]any{"command": "*** Begin Patch\n*** End Patch\n"}}), false},
		{"unknown event name", event(t, map[string]any{"hook_event_name": "PostToolUse"}), false},
		{"event name in another case", event(t, map[string]any{"hook_event_name": "permissionrequest"}), false},
		{"no event name", event(t, map[string]any{"hook_event_name": nil}), false},
		{"relative cwd", event(t, map[string]any{"cwd": "work"}), false},
		{"tool_input not an object", event(t, map[string]any{"tool_input": "git push"}), false},
		{"Bash without a command", event(t, map[string]any{"tool_input": map[string]any{"cmd": "ls"}}), false},
		{"duplicate agent_id", []byte(`{"hook_event_name":"PermissionRequest","agent_id":"../x","agent_id":"a1","cwd":"/w","tool_name":"Bash","tool_input":{"command":"ls"}}`), false},
		{"duplicate tool_name", []byte(`{"hook_event_name":"PermissionRequest","agent_id":"a1","cwd":"/w","tool_name":"Read","tool_name":"Bash","tool_input":{"command":"ls","file_path":"/w/x"}}`), false},
		{"tool_name in another case", []byte(`{"hook_event_name":"PermissionRequest","agent_id":"a1","cwd":"/w","tool_name":"Bash","TOOL_NAME":"Read","tool_input":{"command":"ls"}}`), false},
		{"duplicate command", []byte(`{"hook_event_name":"PermissionRequest","agent_id":"a1","cwd":"/w","tool_name":"Bash","tool_input":{"command":"git push --force origin main","command":"ls"}}`), false},
		{"not JSON", []byte(`hook_event_name=PermissionRequest`), false},
		{"two documents", []byte(`{"hook_event_name":"PermissionRequest"} {}`), false},
		{"unknown tool input too large", event(t, map[string]any{"tool_name": "Frobnicate", "tool_input": map[string]any{"x": strings.Repeat("b", MaxToolValue)}}), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, cli := range []CLI{ClaudeCode, Codex} {
				var f Forwarder = &stub{answers: []decision.Decision{allowAll}}
				if tt.byRules {
					f = &policyForwarder{p: defaultPolicy(t)}
				}
				for _, mode := range []UnavailableMode{UnavailableNone, UnavailableDeny} {
					h := testHook(cli, f)
					h.Unavailable = mode
					res := h.Handle(context.Background(), tt.data)
					if res.Answer.Verdict == VerdictAllow || strings.Contains(string(res.Stdout), `"allow"`) {
						t.Fatalf("%s: allowed: %s", cli, res.Stdout)
					}
					if res.Diag == "" {
						t.Errorf("%s: no diagnostic", cli)
					}
				}
			}
		})
	}
}

// TestPatchHidingAFileAsksForIt: the move target is asked for, and the
// broker's rule on ~/.ssh denies the patch.
func TestPatchHidingAFileAsksForIt(t *testing.T) {
	t.Setenv("HOME", "/home/ada")
	f := &policyForwarder{p: defaultPolicy(t)}
	h := testHook(Codex, f)
	data := event(t, map[string]any{"tool_name": "apply_patch", "tool_input": map[string]any{"command": "*** Begin Patch\n*** Update File: a\n*** Move to: ~/.ssh/authorized_keys\n@@\n-x\n+y\n*** End Patch\n"}})
	res := h.Handle(context.Background(), data)
	if res.Answer.Verdict != VerdictDeny || !strings.Contains(res.Answer.Message, "SSH keys stay private") {
		t.Fatalf("answer %+v, want the ~/.ssh rule's deny", res.Answer)
	}
	// a, then the move target in both readings: a directory `~` in cwd
	// (Codex's), then the home directory's.
	if len(f.requests) != 3 {
		t.Fatalf("forwarded %d asks, want 3 (a, then the move target twice)", len(f.requests))
	}
	if b := f.requests[2].AccessIntent.BoundaryValue; b == nil || *b != "/home/ada/.ssh/authorized_keys" {
		t.Errorf("the move target's home reading is not asked for: %+v", f.requests[2].AccessIntent)
	}
}

// TestWiderSuggestionIsDropped: Claude's suggestion `Bash(*)` is not sent;
// the request keeps courier's own, which the broker admits.
func TestWiderSuggestionIsDropped(t *testing.T) {
	wide := []map[string]any{{"type": "addRules", "behavior": "allow", "destination": "localSettings", "rules": []map[string]any{{"toolName": "Bash", "ruleContent": "*"}, {"toolName": "Bash"}, {"toolName": "Read", "ruleContent": "//**"}}}}
	s := &stub{answers: []decision.Decision{decision.Allow(allowRule)}}
	h := testHook(ClaudeCode, s)
	h.Handle(context.Background(), event(t, map[string]any{"permission_suggestions": wide}))
	if len(s.requests) != 1 {
		t.Fatalf("forwarded %d asks", len(s.requests))
	}
	got := s.requests[0].SessionApproval
	if got == nil || len(got.Grants) != 1 || got.Grants[0] != (wire.SuggestedGrant{Surface: "bash", Pattern: "git push *"}) {
		t.Errorf("suggested %+v, want only courier's own bash \"git push *\"", got)
	}
}

// TestSeveralAsksNeedEveryAllow: one file of a patch denied, or not
// answered, and the patch is not allowed; a deny ends the asking, an ask
// nobody answered does not (a later deny still denies).
func TestSeveralAsksNeedEveryAllow(t *testing.T) {
	data := readEvent(t, "tool_apply_patch")
	allow, deny := decision.Allow(allowRule), decision.Deny("no", byUser)
	none := decision.NobodyAnswered("Session 'courier' did not answer within 300s")
	tests := []struct {
		name    string
		answers []decision.Decision
		want    Verdict
		sent    int
	}{
		{"all allowed", []decision.Decision{allow}, VerdictAllow, 4},
		{"the second denied", []decision.Decision{allow, deny, allow}, VerdictDeny, 2},
		{"the last denied", []decision.Decision{allow, allow, allow, deny}, VerdictDeny, 4},
		{"the third unanswered", []decision.Decision{allow, allow, none, allow}, VerdictNone, 4},
		{"the first unanswered, the last denied", []decision.Decision{none, allow, allow, deny}, VerdictDeny, 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &stub{answers: tt.answers}
			res := testHook(Codex, s).Handle(context.Background(), data)
			if res.Answer.Verdict != tt.want || len(s.requests) != tt.sent {
				t.Errorf("verdict %v after %d asks, want %v after %d", res.Answer.Verdict, len(s.requests), tt.want, tt.sent)
			}
		})
	}
}
