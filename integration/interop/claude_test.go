package interop

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
)

// claudeExe is the native Claude Code binary of the pinned package (its
// npm postinstall may not run; the binary is in the package regardless).
func claudeExe(t *testing.T, tools Tools) string {
	t.Helper()
	if tools.ClaudePrefix == "" {
		t.Fatalf("interop: %s is not set: the npm prefix of Claude Code", EnvClaude)
	}
	exe := filepath.Join(tools.ClaudePrefix, "node_modules", "@anthropic-ai", "claude-code", "bin", "claude.exe")
	if _, err := os.Stat(exe); err != nil {
		t.Fatalf("interop: Claude Code's binary: %v (make interop-deps installs it)", err)
	}
	return exe
}

// brokerSession is the session every case's broker serves, and the one
// the hook forwards to.
const brokerSession = "operator"

// hookRecorder wraps the hook command: it keeps what the hook read, wrote
// and its exit status in DIR (one numbered set per run), and passes stdout
// and the status through unchanged.
const hookRecorder = `#!/bin/sh
d=$1; shift
n=$(date +%s%N)
tee "$d/$n.in" | "$@" >"$d/$n.out" 2>"$d/$n.err"
s=$?
echo "$s" >"$d/$n.status"
cat "$d/$n.out"
exit "$s"
`

// hookRun is one recorded run of the hook.
type hookRun struct {
	In, Out, Err string
	Status       int
}

// hookRuns reads the recorder's runs in the order they started.
func hookRuns(t *testing.T, dir string) []hookRun {
	t.Helper()
	ins, err := filepath.Glob(filepath.Join(dir, "*.in"))
	if err != nil {
		t.Fatalf("listing the hook's runs: %v", err)
	}
	sort.Strings(ins)
	var runs []hookRun
	for _, in := range ins {
		base := strings.TrimSuffix(in, ".in")
		read := func(ext string) string {
			data, _ := os.ReadFile(base + ext)
			return string(data)
		}
		status, err := strconv.Atoi(strings.TrimSpace(read(".status")))
		if err != nil {
			status = -1
		}
		runs = append(runs, hookRun{In: read(".in"), Out: read(".out"), Err: read(".err"), Status: status})
	}
	return runs
}

// claudeRun is what one `claude -p` run left.
type claudeRun struct {
	Status int
	// Result is the stream's final "result" event.
	Result struct {
		Subtype           string `json:"subtype"`
		IsError           bool   `json:"is_error"`
		PermissionDenials []struct {
			ToolName  string         `json:"tool_name"`
			ToolInput map[string]any `json:"tool_input"`
		} `json:"permission_denials"`
	}
	// Sub are the tool_results the subagent's model received.
	Sub []toolResult
	// Hooks are the hook's recorded runs.
	Hooks []hookRun
}

// runClaude runs Claude Code in the case's work tree with the hook wired
// on PermissionRequest, against a scripted model whose subagent runs
// command.
func runClaude(t *testing.T, c *Case, exe, command string) claudeRun {
	t.Helper()
	model := newFakeAnthropic(c, command)
	hookDir := filepath.Join(c.Dir, "hook-runs")
	if err := os.MkdirAll(hookDir, 0o700); err != nil {
		t.Fatalf("making %s: %v", hookDir, err)
	}
	recorder := filepath.Join(c.Dir, "record-hook.sh")
	c.WriteFile(recorder, hookRecorder)
	if err := os.Chmod(recorder, 0o700); err != nil {
		t.Fatalf("chmod %s: %v", recorder, err)
	}
	settings := filepath.Join(c.Dir, "claude-settings.json")
	c.WriteFile(settings, claudeSettings(t, c, recorder+" "+hookDir))

	ctx, cancel := context.WithTimeout(t.Context(), RunTimeout)
	defer cancel()
	cmd := exec.Command(exe, "-p", "Do the task: run the command in a subagent.",
		"--output-format", "stream-json", "--verbose", "--settings", settings,
		"--debug-file", c.LogPath("claude-debug.log"))
	cmd.Dir = c.Work
	cmd.Env = c.Env(
		"ANTHROPIC_BASE_URL="+model.URL(), "ANTHROPIC_API_KEY=interop-test-key",
		"CLAUDE_CONFIG_DIR="+filepath.Join(c.Home, ".claude"),
		"DISABLE_TELEMETRY=1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
		"DISABLE_AUTOUPDATER=1", "DISABLE_ERROR_REPORTING=1")
	var run claudeRun
	var stdout []byte
	run.Status, stdout = c.Run(ctx, "claude", cmd)
	model.check(t)
	run.Sub = model.subagentResults()
	run.Hooks = hookRuns(t, hookDir)
	found := false
	sc := bufio.NewScanner(bytes.NewReader(stdout))
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		var head struct{ Type string }
		if json.Unmarshal(sc.Bytes(), &head) == nil && head.Type == "result" {
			if err := json.Unmarshal(sc.Bytes(), &run.Result); err != nil {
				t.Fatalf("claude's result event: %v: %s", err, sc.Bytes())
			}
			found = true
		}
	}
	if !found {
		t.Fatalf("claude (exit %d) printed no result event", run.Status)
	}
	return run
}

// claudeSettings is what `child hook --print-config claude-code` prints
// for the broker's session and the case's mailbox root, each hook command
// run through the recorder (prefix).
func claudeSettings(t *testing.T, c *Case, prefix string) string {
	t.Helper()
	cmd := exec.Command(c.Tools.Child, "hook", "--print-config", "claude-code", "--parent", brokerSession, "--root", c.Root)
	cmd.Env = c.Env()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("child hook --print-config claude-code: %v: %s", err, stderr.String())
	}
	c.WriteFile(c.LogPath("print-config.json"), string(out))
	var settings struct {
		Hooks map[string][]struct {
			Matcher string           `json:"matcher"`
			Hooks   []map[string]any `json:"hooks"`
		} `json:"hooks"`
	}
	if err := json.Unmarshal(out, &settings); err != nil {
		t.Fatalf("child hook --print-config claude-code: not settings JSON: %v:\n%s", err, out)
	}
	groups := settings.Hooks["PermissionRequest"]
	if len(groups) == 0 {
		t.Fatalf("child hook --print-config claude-code wires no PermissionRequest hook:\n%s", out)
	}
	for _, g := range groups {
		for _, h := range g.Hooks {
			command, _ := h["command"].(string)
			if !strings.Contains(command, c.Tools.Child) || !strings.Contains(command, c.Root) {
				t.Fatalf("the printed hook command %q names neither %s nor the --root given", command, c.Tools.Child)
			}
			h["command"] = prefix + " " + command
		}
	}
	data, err := json.MarshalIndent(settings, "", "  ")
	if err != nil {
		t.Fatalf("encoding the settings: %v", err)
	}
	return string(data)
}

// bashResult is the one tool_result of the subagent's Bash call.
func bashResult(t *testing.T, run claudeRun) toolResult {
	t.Helper()
	var bash []toolResult
	for _, r := range run.Sub {
		if strings.HasPrefix(r.ToolUseID, "toolu_sub_") {
			bash = append(bash, r)
		}
	}
	if len(bash) != 1 {
		t.Fatalf("the subagent's model got %d Bash tool_results, want 1: %+v", len(bash), run.Sub)
	}
	return bash[0]
}

// allowFeatureX is a config whose one rule beyond "ask" allows the push
// of case config-allow.
const allowFeatureX = `{
  "permission": {
    "*": "ask",
    "bash": {"*": "ask", "git push origin feature-x": "allow"}
  }
}
`

// TestClaudeCode drives Claude Code 2.1.328 in -p mode: a subagent's Bash
// call reaches PermissionRequest, `child hook claude-code` forwards it to
// the broker (or finds none), and the push happens or not as decided.
func TestClaudeCode(t *testing.T) {
	tools := Require(t)
	exe := claudeExe(t, tools)
	tests := []struct {
		name    string
		command string
		branch  string
		// broker is nil for no broker at all.
		broker *BrokerOptions
		// answer answers at the broker's tty, for Terminal "tty"; it runs
		// beside Claude Code, in a goroutine of its own.
		answer     func(ctx context.Context, b *Broker) error
		wantPushed bool
		// wantResult matches the tool_result the subagent's model got.
		wantResult string
		wantError  bool
		// wantReview matches a line of the broker's review log.
		wantReview string
		// wantHookOut matches the hook's stdout (every run).
		wantHookOut string
		// wantDenials is how many permission_denials the result lists.
		wantDenials int
	}{{
		name:    "deny",
		command: "git push --force origin main", branch: "main",
		broker:      &BrokerOptions{Session: brokerSession, Terminal: "deny"},
		wantResult:  `^courier: denied by rule bash "git push --force\*" at session "operator": Force-pushing rewrites shared history; push to a new branch instead$`,
		wantError:   true,
		wantReview:  `"event":"forwarded_permission.auto_denied","decidedBy":\{"kind":"rule","origin":"global","pattern":"git push --force\*","surface":"bash"\}`,
		wantHookOut: `^\{"hookSpecificOutput":\{"hookEventName":"PermissionRequest","decision":\{"behavior":"deny","message":"courier: denied by rule bash \\"git push --force\*\\" at session \\"operator\\": Force-pushing rewrites shared history; push to a new branch instead"\}\}\}\n?$`,
		wantDenials: 1,
	}, {
		name:    "config-allow",
		command: "git push origin feature-x", branch: "feature-x",
		broker:      &BrokerOptions{Session: brokerSession, Terminal: "deny", Config: allowFeatureX},
		wantPushed:  true,
		wantResult:  `\[new branch\] +feature-x -> feature-x`,
		wantReview:  `"event":"forwarded_permission.auto_approved","decidedBy":\{"kind":"rule","origin":"global","pattern":"git push origin feature-x","surface":"bash"\}`,
		wantHookOut: `^\{"hookSpecificOutput":\{"hookEventName":"PermissionRequest","decision":\{"behavior":"allow"\}\}\}\n?$`,
	}, {
		name:    "tty",
		command: "git push origin feature-x", branch: "feature-x",
		broker: &BrokerOptions{Session: brokerSession, Terminal: "tty"},
		answer: func(ctx context.Context, b *Broker) error {
			for _, want := range []string{`Permission Required \(Subagent\)`,
				`(?m)^  command +git push origin feature-x$`, `or press y s n r`} {
				if _, err := b.Tty.AwaitScreen(ctx, want); err != nil {
					return err
				}
			}
			return b.Tty.SendKeys("y")
		},
		wantPushed:  true,
		wantResult:  `\[new branch\] +feature-x -> feature-x`,
		wantReview:  `"event":"forwarded_permission.approved".*"decidedBy":\{"kind":"user","via":"dialog"\}.*"terminal":"tty"`,
		wantHookOut: `^\{"hookSpecificOutput":\{"hookEventName":"PermissionRequest","decision":\{"behavior":"allow"\}\}\}\n?$`,
	}, {
		name:    "no-broker",
		command: "git push origin feature-x", branch: "feature-x",
		wantResult:  `^This command requires approval$`,
		wantError:   true,
		wantHookOut: `^$`,
		wantDenials: 1,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := NewCase(t, tools)
			var b *Broker
			if tt.broker != nil {
				b = c.StartBroker(*tt.broker)
			}
			// The answer waits for the prompt while Claude Code waits for
			// the answer; once Claude Code is done, the prompt has had its
			// chance.
			answered := make(chan error, 1)
			ctx, cancel := context.WithTimeout(t.Context(), RunTimeout)
			defer cancel()
			if tt.answer != nil {
				go func() { answered <- tt.answer(ctx, b) }()
			} else {
				answered <- nil
			}
			start := time.Now()
			run := runClaude(t, c, exe, tt.command)
			cancel()
			if err := <-answered; err != nil {
				t.Errorf("answering at the broker's tty: %v", err)
			}
			t.Logf("claude -p ran %s, exit %d", time.Since(start).Round(time.Millisecond), run.Status)
			if run.Status != 0 {
				t.Errorf("claude exited %d", run.Status)
			}

			if got := c.Pushed(tt.branch); got != tt.wantPushed {
				t.Errorf("%s pushed to the bare origin: %v, want %v", tt.branch, got, tt.wantPushed)
			}
			res := bashResult(t, run)
			t.Logf("the subagent's model got tool_result %q (is_error %v)", res.Text, res.IsError)
			if !regexp.MustCompile(tt.wantResult).MatchString(res.Text) || res.IsError != tt.wantError {
				t.Errorf("the subagent's model got tool_result %q (is_error %v), want %q (is_error %v)", res.Text, res.IsError, tt.wantResult, tt.wantError)
			}
			if got := len(run.Result.PermissionDenials); got != tt.wantDenials {
				t.Errorf("result.permission_denials has %d entries, want %d: %+v", got, tt.wantDenials, run.Result.PermissionDenials)
			}
			for _, d := range run.Result.PermissionDenials {
				if d.ToolName != "Bash" || d.ToolInput["command"] != tt.command {
					t.Errorf("result.permission_denials lists %s %v, want Bash %q", d.ToolName, d.ToolInput, tt.command)
				}
			}
			if len(run.Hooks) != 1 {
				t.Errorf("the hook ran %d times, want once: %+v", len(run.Hooks), run.Hooks)
			}
			for _, h := range run.Hooks {
				if !strings.Contains(h.In, `"agent_id"`) || !strings.Contains(h.In, `"hook_event_name":"PermissionRequest"`) {
					t.Errorf("the hook read no subagent PermissionRequest: %s", h.In)
				}
				if h.Status != 0 || !regexp.MustCompile(tt.wantHookOut).MatchString(h.Out) {
					t.Errorf("the hook exited %d printing %q (stderr %q), want 0 and %q", h.Status, h.Out, h.Err, tt.wantHookOut)
				}
			}
			if b != nil {
				t.Logf("review: %s", b.WaitReview(tt.wantReview, ServeTimeout))
			}
		})
	}
}
