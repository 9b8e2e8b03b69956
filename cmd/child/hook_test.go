package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/seed6639df8c/courier/mailbox"
	"github.com/seed6639df8c/courier/wire"
)

// TestHookPrintConfig: the settings parse as JSON and run this binary by
// its absolute path with the flags given, for both agents.
func TestHookPrintConfig(t *testing.T) {
	self, err := os.Executable()
	if err == nil {
		self, err = filepath.EvalSymlinks(self)
	}
	if err != nil {
		t.Fatal(err)
	}
	for _, cli := range []string{"claude-code", "codex"} {
		var stdout, stderr bytes.Buffer
		// The agent first or the flags first: both read the same.
		for _, args := range [][]string{
			{"--print-config", cli, "--parent", "ops", "--unavailable", "deny"},
			{cli, "--print-config", "--parent", "ops", "--unavailable", "deny"},
		} {
			stdout.Reset()
			if code := run(context.Background(), append([]string{"hook"}, args...), func(string) string { return "" }, nil, &stdout, &stderr); code != 0 {
				t.Fatalf("%v: exit %d: %s", args, code, stderr.String())
			}
			var s struct {
				Hooks struct {
					PermissionRequest []struct {
						Matcher string
						Hooks   []struct {
							Type, Command string
							Timeout       int
						}
					}
				}
			}
			if err := json.Unmarshal(stdout.Bytes(), &s); err != nil {
				t.Fatalf("%v: %v\n%s", args, err, stdout.String())
			}
			h := s.Hooks.PermissionRequest[0].Hooks[0]
			want := self + " hook " + cli + " --parent ops --unavailable deny"
			if !strings.Contains(self, " ") && h.Command != want {
				t.Errorf("%v: command %q, want %q", args, h.Command, want)
			}
			if h.Type != "command" || h.Timeout != 360 || s.Hooks.PermissionRequest[0].Matcher != "*" {
				t.Errorf("%v: %+v", args, s)
			}
		}
	}
}

// TestHookUsageErrors: a mistake in the hook's command line is exit 2
// with the mistake named, and nothing on stdout.
func TestHookUsageErrors(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{nil, "which agent? expected claude-code or codex"},
		{[]string{"gemini"}, `unknown agent "gemini"`},
		{[]string{"codex", "--unavailable", "allow"}, `--unavailable "allow": expected none or deny`},
		{[]string{"codex", "--main", "all"}, `--main "all": expected skip or forward`},
		{[]string{"codex", "--timeout", "0s"}, "--timeout must be positive"},
		{[]string{"codex", "extra"}, `unexpected argument "extra"`},
		{[]string{"codex", "--parent", "unknown"}, "the broker's session"},
	}
	for _, tt := range tests {
		var stdout, stderr bytes.Buffer
		code := run(context.Background(), append([]string{"hook"}, tt.args...), func(string) string { return "" }, strings.NewReader("{}"), &stdout, &stderr)
		if code != exitUsage || stdout.Len() != 0 || !strings.Contains(stderr.String(), tt.want) {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 2 naming %q", tt.args, code, stdout.String(), stderr.String(), tt.want)
		}
	}
}

// TestHookKeepsItsDeadline: a broker that is alive (a fresh heartbeat) and
// never answers makes child hook end at --timeout with no decision on
// stdout (the agent asks its user), exit 0, and a diagnostic that says
// nobody answered in time. It said "the session ended" in about half the
// runs: the event's context and the ask's timer ended together, and
// select picked either (forward.Client.Deadline).
func TestHookKeepsItsDeadline(t *testing.T) {
	const parent = "silent"
	root := filepath.Join(t.TempDir(), "root")
	layout := mailbox.Layout{Root: root}
	beat := &mailbox.HeartbeatPublisher{Layout: layout, Session: parent, ResponseBinding: wire.BindingSHA256}
	if err := beat.Publish(); err != nil {
		t.Fatal(err)
	}
	if err := layout.EnsureInbox(parent); err != nil {
		t.Fatal(err)
	}
	const timeout = 300 * time.Millisecond
	const margin = 500 * time.Millisecond
	event := `{"session_id": "b648dec7", "cwd": "/work/proj", "agent_id": "a8f2c355829900d95", "agent_type": "general-purpose", "hook_event_name": "PermissionRequest", "tool_name": "Bash", "tool_input": {"command": "ls"}}`
	for i := range 6 {
		var stdout, stderr bytes.Buffer
		args := []string{"hook", "claude-code", "--parent", parent, "--timeout", timeout.String(), "--root", root}
		start := time.Now()
		code := run(t.Context(), args, func(string) string { return "" }, strings.NewReader(event), &stdout, &stderr)
		took := time.Since(start)
		if code != 0 || stdout.Len() != 0 {
			t.Errorf("run %d: exit %d, stdout %q: want exit 0 and no decision", i, code, stdout.String())
		}
		if took > timeout+margin {
			t.Errorf("run %d: took %s, want within %s", i, took, timeout+margin)
		}
		if want := "did not answer within 0.3s"; !strings.Contains(stderr.String(), want) {
			t.Errorf("run %d: stderr %q lacks %q", i, stderr.String(), want)
		}
	}
}
