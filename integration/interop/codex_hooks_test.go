package interop

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
)

// codexHookRecorder is hooks.json as the operator pastes it (`child hook
// --print-config codex` with the case's broker session and mailbox root),
// with its command run inside a recorder script: the printed command line
// runs verbatim, its stdout goes to Codex unchanged, and each call's
// stdin, stdout, stderr and exit status are kept in dir. So a case can
// show what Codex sent and what the hook answered, including the
// no-broker case, where the hook answers nothing and logs nothing.
type codexHookRecorder struct {
	// config is hooks.json's content.
	config string
	dir    string
}

// codexHookCall is one recorded run of the hook.
type codexHookCall struct {
	Stdin, Stdout, Stderr string
	Status                string
}

// codexRecorderScript runs the printed command (%s, a shell command
// line) on the event, keeping what went in and out under $dir.
const codexRecorderScript = `#!/bin/sh
dir=%q
call=$dir/$(date +%%s%%N)-$$
mkdir -p "$call"
cat >"$call/stdin"
%s <"$call/stdin" >"$call/stdout" 2>"$call/stderr"
echo $? >"$call/status"
cat "$call/stdout"
cat "$call/stderr" >&2
`

// codexHooks prints the config with the real binary and wraps its
// PermissionRequest command in the recorder.
func codexHooks(c *Case, parent, dir string) *codexHookRecorder {
	c.T.Helper()
	hookLog := c.LogPath("hook-review.jsonl")
	cmd := exec.Command(c.Tools.Child, "hook", "--print-config", "codex", "--parent", parent, "--root", c.Root, "--log", hookLog)
	cmd.Env = c.Env()
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		c.T.Fatalf("child hook --print-config codex: %v: %s", err, stderr.String())
	}
	var cfg map[string]map[string][]map[string]any
	if err := json.Unmarshal(out, &cfg); err != nil {
		c.T.Fatalf("child hook --print-config codex printed no hooks.json: %v\n%s", err, out)
	}
	groups := cfg["hooks"]["PermissionRequest"]
	if len(groups) != 1 {
		c.T.Fatalf("child hook --print-config codex: want one PermissionRequest group:\n%s", out)
	}
	hooks, _ := groups[0]["hooks"].([]any)
	var hook map[string]any
	if len(hooks) == 1 {
		hook, _ = hooks[0].(map[string]any)
	}
	printed, _ := hook["command"].(string)
	if hook["type"] != "command" || !strings.Contains(printed, " hook codex") || !strings.Contains(printed, "--parent "+parent) {
		c.T.Fatalf("child hook --print-config codex: want one command hook running `child hook codex --parent %s`:\n%s", parent, out)
	}
	script := filepath.Join(c.Dir, "hook-recorder.sh")
	c.WriteFile(script, fmt.Sprintf(codexRecorderScript, dir, printed))
	if err := os.Chmod(script, 0o700); err != nil {
		c.T.Fatalf("%v", err)
	}
	hook["command"] = script
	adjusted, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		c.T.Fatalf("hooks.json: %v", err)
	}
	c.T.Logf("hooks.json printed by child hook --print-config codex:\n%s", out)
	return &codexHookRecorder{config: string(adjusted), dir: dir}
}

// calls are the hook's runs so far, in order.
func (h *codexHookRecorder) calls() ([]codexHookCall, error) {
	entries, err := os.ReadDir(h.dir)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the hook calls: %w", err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	sort.Strings(names)
	var calls []codexHookCall
	for _, n := range names {
		var call codexHookCall
		for _, f := range []struct {
			name string
			to   *string
		}{{"stdin", &call.Stdin}, {"stdout", &call.Stdout}, {"stderr", &call.Stderr}, {"status", &call.Status}} {
			data, err := os.ReadFile(filepath.Join(h.dir, n, f.name))
			if err != nil {
				return nil, fmt.Errorf("hook call %s: %w", n, err)
			}
			*f.to = string(data)
		}
		call.Status = strings.TrimSpace(call.Status)
		calls = append(calls, call)
	}
	return calls, nil
}

// codexHookEvent is what the checks read of the event Codex sent.
type codexHookEvent struct {
	HookEventName string `json:"hook_event_name"`
	AgentID       string `json:"agent_id"`
	ToolName      string `json:"tool_name"`
	ToolInput     struct {
		Command     string `json:"command"`
		Description string `json:"description"`
	} `json:"tool_input"`
}

// onlyCall checks that the hook ran once, for the subagent's
// PermissionRequest on command, exited 0, and returns the call.
func (r *codexRun) onlyCall(command string) codexHookCall {
	r.c.T.Helper()
	calls, err := r.hooks.calls()
	if err != nil {
		r.c.T.Fatalf("%v", err)
	}
	if len(calls) != 1 {
		r.c.T.Fatalf("the hook ran %d times, want once: %+v", len(calls), calls)
	}
	call := calls[0]
	r.c.T.Logf("the hook's stdin: %s\nstdout: %s\nstderr: %s\nexit status: %s", call.Stdin, call.Stdout, call.Stderr, call.Status)
	var ev codexHookEvent
	if err := json.Unmarshal([]byte(call.Stdin), &ev); err != nil {
		r.c.T.Fatalf("the hook's stdin is no JSON event: %v\n%s", err, call.Stdin)
	}
	if ev.HookEventName != "PermissionRequest" || ev.AgentID == "" || ev.ToolName != "Bash" ||
		ev.ToolInput.Command != command || ev.ToolInput.Description != codexJustification {
		r.c.T.Errorf("the hook's event is not the subagent's PermissionRequest for Bash %q (justification %q):\n%s", command, codexJustification, call.Stdin)
	}
	if call.Status != "0" {
		r.c.T.Errorf("the hook exited %s, want 0", call.Status)
	}
	return call
}

// codexDecision reads the hook's answer: Codex honours only
// hookSpecificOutput.decision {behavior, message} for PermissionRequest
// and discards an answer with anything else, so any other key fails.
func (r *codexRun) codexDecision(stdout string) (behavior, message string) {
	r.c.T.Helper()
	var out struct {
		HookSpecificOutput struct {
			HookEventName string         `json:"hookEventName"`
			Decision      map[string]any `json:"decision"`
		} `json:"hookSpecificOutput"`
	}
	if err := json.Unmarshal([]byte(stdout), &out); err != nil {
		r.c.T.Fatalf("the hook's stdout is no JSON answer: %v\n%s", err, stdout)
	}
	d := out.HookSpecificOutput.Decision
	if out.HookSpecificOutput.HookEventName != "PermissionRequest" || d == nil {
		r.c.T.Fatalf("the hook's stdout is not a PermissionRequest decision:\n%s", stdout)
	}
	for k := range d {
		if k != "behavior" && k != "message" {
			r.c.T.Errorf("the hook's decision has %q, which makes Codex discard it:\n%s", k, stdout)
		}
	}
	behavior, _ = d["behavior"].(string)
	message, _ = d["message"].(string)
	return behavior, message
}
