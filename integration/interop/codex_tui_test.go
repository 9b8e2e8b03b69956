package interop

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// codexApprovalPrompt is the first line of Codex's own approval prompt
// (its flow when no hook decided).
const codexApprovalPrompt = "Would you like to run the following command?"

// codexRun is one run of Codex CLI's interactive TUI in a private tmux
// server, against the scripted model: `codex exec` never asks for
// approval (it forces approval_policy=never), so PermissionRequest hooks
// only run in the TUI.
type codexRun struct {
	c     *Case
	model *codexFakeModel
	tty   *Tmux
	hooks *codexHookRecorder
	start time.Time
	// promptSeen is set when a screen read showed codexApprovalPrompt.
	promptSeen bool
	// wall is how long Codex ran, from its start to its exit.
	wall time.Duration
}

// codexOptions say how to run Codex.
type codexOptions struct {
	// Command is what the subagent asks to run.
	Command string
	// Parent is the broker session the hook forwards to (there may be no
	// broker serving it).
	Parent string
}

// codexBinary is the pinned Codex CLI under the npm prefix make interop
// installed it in.
func codexBinary(t *testing.T, tools Tools) string {
	t.Helper()
	if tools.CodexPrefix == "" {
		t.Fatalf("interop: %s is not set: the npm prefix of the pinned Codex CLI", EnvCodex)
	}
	bin := filepath.Join(tools.CodexPrefix, "node_modules", ".bin", "codex")
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("interop: the Codex CLI: %v (make interop-deps installs it)", err)
	}
	return bin
}

// startCodex writes CODEX_HOME (config.toml pointing at the scripted
// model, hooks.json with courier's hook) and starts the TUI in the work
// tree with the main agent's task as its first prompt.
func startCodex(c *Case, opts codexOptions) *codexRun {
	c.T.Helper()
	bin := codexBinary(c.T, c.Tools)
	model := startCodexFakeModel(c.T, filepath.Join(c.Dir, "model-requests"), opts.Command)
	home := filepath.Join(c.Dir, "codex_home")
	c.WriteFile(filepath.Join(home, "config.toml"), codexConfig(model.url, c.Work))
	hooks := codexHooks(c, opts.Parent, filepath.Join(c.Dir, "hook-calls"))
	c.WriteFile(filepath.Join(home, "hooks.json"), hooks.config)
	env := c.Env("CODEX_HOME="+home, "FAKE_OPENAI_KEY=interop-test-key")
	r := &codexRun{c: c, model: model, hooks: hooks, start: time.Now()}
	// Unmanaged hooks need the user's trust, given in the TUI; the flag
	// skips that review (Codex shows it as a warning).
	r.tty = c.StartTmux("codex", c.Work, env, bin, "--dangerously-bypass-hook-trust", codexMainTask)
	return r
}

// codexConfig is config.toml: the scripted provider, approvals on request
// in the workspace-write sandbox (so an escalated command asks), nothing
// that calls out, and the work tree trusted (no trust screen).
// "fake-model" because a real model name makes the TUI show a model
// migration screen first.
func codexConfig(url, work string) string {
	return fmt.Sprintf(`model = "fake-model"
model_provider = "fake"
approval_policy = "on-request"
sandbox_mode = "workspace-write"

[model_providers.fake]
name = "fake"
base_url = %q
wire_api = "responses"
env_key = "FAKE_OPENAI_KEY"

[analytics]
enabled = false

[features]
plugins = false
remote_plugin = false

[projects.%q]
trust_level = "trusted"
`, url, work)
}

// screen reads the TUI's screen, noting Codex's own approval prompt.
func (r *codexRun) screen() string {
	s := r.tty.Screen()
	if strings.Contains(s, codexApprovalPrompt) {
		r.promptSeen = true
	}
	return s
}

// waitScreen waits (up to RunTimeout from the start) until the screen
// contains text, and returns the screen.
func (r *codexRun) waitScreen(text string) string {
	r.c.T.Helper()
	deadline := r.start.Add(RunTimeout)
	for {
		s := r.screen()
		if strings.Contains(s, text) {
			return s
		}
		if n, ok := r.tty.Exited(); ok {
			r.c.T.Fatalf("codex exited (%d) before its screen showed %q:\n%s", n, text, s)
		}
		if time.Now().After(deadline) {
			r.c.T.Fatalf("after %s codex's screen never showed %q:\n%s", RunTimeout, text, s)
		}
		time.Sleep(pollEvery)
	}
}

// waitScreenGone waits (up to ScreenTimeout) until the screen no longer
// contains text.
func (r *codexRun) waitScreenGone(text string) {
	r.c.T.Helper()
	deadline := time.Now().Add(ScreenTimeout)
	for {
		s := r.tty.Screen()
		if !strings.Contains(s, text) {
			return
		}
		if time.Now().After(deadline) {
			r.c.T.Fatalf("after %s codex's screen still shows %q:\n%s", ScreenTimeout, text, s)
		}
		time.Sleep(pollEvery)
	}
}

// execOutput waits for the output the subagent's command got, reading
// the screen meanwhile (so a prompt shown on the way is noted).
func (r *codexRun) execOutput() string {
	r.c.T.Helper()
	ctx, cancel := context.WithDeadline(context.Background(), r.start.Add(RunTimeout))
	defer cancel()
	for !r.model.execOutputSeen() {
		s := r.screen()
		if n, ok := r.tty.Exited(); ok {
			r.c.T.Fatalf("codex exited (%d) before the subagent's command returned:\n%s", n, s)
		}
		if ctx.Err() != nil {
			break
		}
		time.Sleep(pollEvery)
	}
	out, err := r.model.execOutput(ctx)
	if err != nil {
		r.c.T.Fatalf("%v; screen:\n%s", err, r.tty.Screen())
	}
	r.c.T.Logf("the subagent's command returned %s after codex started; the model got:\n%s", time.Since(r.start).Round(time.Millisecond), out)
	return out
}

// quit stops the TUI as a user would, with Ctrl-C: during a turn it
// interrupts the turn (then the next press quits), at rest it quits.
// A press can be lost: one that lands as the turn ends interrupts
// nothing and only arms a quit that lapses after a second. So a press
// is repeated when the screen shows an interrupted turn, or nothing at
// all within codexQuietPress; never once Codex printed its exit summary,
// because it lingers seconds after that with the terminal back in
// cooked mode, where a Ctrl-C is a SIGINT (exit 130), not a key. It
// fails the test unless Codex exits 0, and records the wall time.
func (r *codexRun) quit() {
	r.c.T.Helper()
	deadline := time.Now().Add(ScreenTimeout)
	for presses := 0; presses < 5; presses++ {
		interrupted := strings.Count(r.tty.Screen(), codexInterrupted)
		r.tty.Send("C-c")
		again := time.Now().Add(codexQuietPress)
		for {
			if n, ok := r.tty.Exited(); ok {
				r.wall = time.Since(r.start)
				if n != 0 {
					r.c.T.Errorf("codex exited %d:\n%s", n, r.tty.Screen())
				}
				r.c.T.Logf("codex ran %s (start to exit)", r.wall.Round(time.Millisecond))
				return
			}
			s := r.tty.Screen()
			if time.Now().After(deadline) {
				r.c.T.Fatalf("codex did not exit %s after the first Ctrl-C:\n%s", ScreenTimeout, s)
			}
			exiting := strings.Contains(s, codexExitSummary)
			if !exiting && (strings.Count(s, codexInterrupted) > interrupted || time.Now().After(again)) {
				break
			}
			time.Sleep(pollEvery)
		}
	}
	r.c.T.Fatalf("codex did not quit after five Ctrl-C:\n%s", r.tty.Screen())
}

// What the TUI shows when Ctrl-C stopped a turn, and what it prints as
// it exits.
const (
	codexInterrupted = "Conversation interrupted"
	codexExitSummary = "To continue this session, run:"
)

// codexQuietPress is how long a Ctrl-C that changed nothing on the
// screen is given before the next press: Codex arms the quit for a
// second after a press.
const codexQuietPress = 2 * time.Second
