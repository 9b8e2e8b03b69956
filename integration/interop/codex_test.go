package interop

import (
	"strings"
	"testing"
)

// The broker session every Codex case's hook forwards to.
const codexParent = "codex-parent"

// codexFeatureConfig is the broker's rules config of the allowed-push
// case: every command asks, but for one push the operator allows.
const codexFeatureConfig = `{"permission": {"*": "ask", "bash": {"*": "ask", "git push origin feature-x": "allow"}}}
`

// codexForceReason is the built-in rule's reason for denying a force push.
const codexForceReason = "Force-pushing rewrites shared history; push to a new branch instead"

// A subagent's force push is denied by the broker's built-in rule: the
// push does not happen, and the model reads the broker's reason.
func TestCodexSubagentForcePushDeniedByRule(t *testing.T) {
	c := NewCase(t, Require(t))
	b := c.StartBroker(BrokerOptions{Session: codexParent})
	const command = "git push --force origin main"
	r := startCodex(c, codexOptions{Command: command, Parent: codexParent})
	out := r.execOutput()
	r.waitScreen("MAIN-DONE")
	r.quit()
	call := r.onlyCall(command)
	if behavior, message := r.codexDecision(call.Stdout); behavior != "deny" || !strings.Contains(message, codexForceReason) {
		t.Errorf("the hook answered %q %q, want deny with the rule's reason", behavior, message)
	}
	if !strings.Contains(out, "Rejected(") || !strings.Contains(out, codexForceReason) {
		t.Errorf("the model's tool output is not the rejection carrying the broker's reason:\n%s", out)
	}
	if c.Pushed("main") {
		t.Errorf("main reached origin: the denied force push ran")
	}
	if r.promptSeen {
		t.Errorf("Codex showed its own approval prompt: the broker's denial was not honoured")
	}
	b.WaitReview(`"event":"forwarded_permission\.denied".*"pattern":"git push --force\*"`, ServeTimeout)
}

// A push the broker's config allows runs without a prompt anywhere.
func TestCodexSubagentAllowedPushRuns(t *testing.T) {
	c := NewCase(t, Require(t))
	b := c.StartBroker(BrokerOptions{Session: codexParent, Config: codexFeatureConfig})
	const command = "git push origin feature-x"
	r := startCodex(c, codexOptions{Command: command, Parent: codexParent})
	out := r.execOutput()
	r.waitScreen("MAIN-DONE")
	r.quit()
	call := r.onlyCall(command)
	if behavior, _ := r.codexDecision(call.Stdout); behavior != "allow" {
		t.Errorf("the hook answered %q, want allow", behavior)
	}
	if !strings.Contains(out, "feature-x -> feature-x") {
		t.Errorf("the model's tool output is not the push's:\n%s", out)
	}
	if !c.Pushed("feature-x") {
		t.Errorf("feature-x is not on origin: the allowed push did not run")
	}
	if r.promptSeen {
		t.Errorf("Codex showed its own approval prompt for a push the broker allows")
	}
	b.WaitReview(`"event":"forwarded_permission\.approved".*"pattern":"git push origin feature-x"`, ServeTimeout)
}

// An ask no rule decides is answered at the broker's tty prompt (yes,
// once), and the command runs.
func TestCodexSubagentAskAnsweredAtBrokerTTY(t *testing.T) {
	c := NewCase(t, Require(t))
	b := c.StartBroker(BrokerOptions{Session: codexParent, Terminal: "tty"})
	const command = "git push origin main"
	r := startCodex(c, codexOptions{Command: command, Parent: codexParent})
	b.Tty.WaitScreen(`Permission Required \(Subagent\)`, RunTimeout)
	b.Tty.WaitScreen(`(?m)^  command +git push origin main$`, ScreenTimeout)
	b.Tty.WaitScreen(`or press y s n r`, ScreenTimeout)
	if c.Pushed("main") {
		t.Fatalf("main reached origin before the operator answered")
	}
	b.Tty.Send("y")
	out := r.execOutput()
	r.waitScreen("MAIN-DONE")
	r.quit()
	call := r.onlyCall(command)
	if behavior, _ := r.codexDecision(call.Stdout); behavior != "allow" {
		t.Errorf("the hook answered %q, want allow", behavior)
	}
	if !strings.Contains(out, "main -> main") {
		t.Errorf("the model's tool output is not the push's:\n%s", out)
	}
	if !c.Pushed("main") {
		t.Errorf("main is not on origin: the push the operator allowed did not run")
	}
	if r.promptSeen {
		t.Errorf("Codex showed its own approval prompt for an ask the operator answered")
	}
	b.WaitReview(`"event":"forwarded_permission\.approved".*"decidedBy":\{"kind":"user","via":"dialog"\}`, ServeTimeout)
}

// With no broker the hook gives no decision (no output, exit 0): Codex's
// own approval prompt decides. It is answered "no" (esc) and nothing is
// pushed.
func TestCodexNoBrokerCodexPromptDecides(t *testing.T) {
	c := NewCase(t, Require(t))
	const command = "git push origin main"
	r := startCodex(c, codexOptions{Command: command, Parent: codexParent})
	s := r.waitScreen(codexApprovalPrompt)
	if !strings.Contains(s, "$ "+command) {
		t.Errorf("Codex's prompt does not show the subagent's command:\n%s", s)
	}
	if c.Pushed("main") {
		t.Fatalf("main reached origin while Codex's prompt waits")
	}
	r.tty.Send("Escape")
	r.waitScreenGone(codexApprovalPrompt)
	r.quit()
	call := r.onlyCall(command)
	if call.Stdout != "" {
		t.Errorf("with no broker the hook answered %q, want nothing", call.Stdout)
	}
	if c.Pushed("main") {
		t.Errorf("main reached origin after the prompt was answered no")
	}
	if r.model.execOutputSeen() {
		t.Errorf("the subagent's command returned an output after a no")
	}
}
