package prompt

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/seed6639df8c/courier/decision"
)

// xterm is an environment with a terminal that reads OSC 9.
func xterm(k string) string {
	if k == "TERM" {
		return "xterm-256color"
	}
	return ""
}

// writesTTY is a fakeTTY that also keeps every write, to check what
// each write holds.
type writesTTY struct {
	*fakeTTY
	mu     sync.Mutex
	writes []string
}

func (w *writesTTY) Write(b []byte) (int, error) {
	w.mu.Lock()
	w.writes = append(w.writes, string(b))
	w.mu.Unlock()
	return w.fakeTTY.Write(b)
}

// alerts returns the bells rung and the string sequences written.
func (f *fakeTTY) alerts() (int, []string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.screen.bells, append([]string(nil), f.screen.strings...)
}

// waitAlerts waits until n bells have rung.
func (f *fakeTTY) waitAlerts(t *testing.T, n int) []string {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		bells, oscs := f.alerts()
		if bells >= n {
			return oscs
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d bells rung, want %d", bells, n)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// Issue 16 §3: an ask waited unseen. An ask that reaches the prompt rings
// the bell and asks the terminal for a desktop notification, in the same
// write as a frame and at its start; a flood makes one more, which
// counts it. A hostile agent name reaches the terminal escaped.
func TestAskRingsTheBell(t *testing.T) {
	checkNoLeak(t)
	tty := &writesTTY{fakeTTY: newFakeTTY(100, 30)}
	p := start(tty, Options{Session: "parent", ArmDelay: -1, Getenv: xterm})
	defer p.Close()
	tty.waitScreen(t, "no asks waiting")
	if bells, _ := tty.alerts(); bells != 0 {
		t.Fatalf("%d bells with no ask", bells)
	}
	hostile := testAsk("x\x1b]0;pwned\x07\x1b[2J\u202e", "git push", false)
	p.Hold(&hostile, func(decision.Decision) {})
	oscs := tty.waitAlerts(t, 1)
	want := "\x1b]9;courier: 'x\\x1b]0;pwned\\x07\\x1b[2J\\u202e' asks bash: git push\a"
	if len(oscs) != 1 || oscs[0] != want {
		t.Fatalf("the notification escapes: %q, want %q", oscs, want)
	}
	tty.waitScreen(t, "git push")
	for range 50 {
		a := testAsk("flood", "curl x", false)
		p.Hold(&a, func(decision.Decision) {})
	}
	oscs = tty.waitAlerts(t, 2)
	if len(oscs) != 2 || oscs[1] != "\x1b]9;courier: 50 new asks; the last: 'flood' asks bash: curl x\a" {
		t.Fatalf("after the flood: %q", oscs)
	}
	tty.mu.Lock()
	defer tty.mu.Unlock()
	for _, w := range tty.writes {
		if i := strings.IndexByte(w, '\a'); i > 0 && !strings.HasPrefix(w, "\a") {
			t.Errorf("a bell in the middle of a write: %q", w)
		}
	}
}

// Without a terminal that reads the escape, the bell alone.
func TestBellOnAConsole(t *testing.T) {
	tty := newFakeTTY(100, 30)
	p := start(tty, Options{Session: "parent", ArmDelay: -1, Getenv: func(k string) string {
		return map[string]string{"TERM": "linux"}[k]
	}})
	defer p.Close()
	a := testAsk("alpha", "ls", false)
	p.Hold(&a, func(decision.Decision) {})
	if oscs := tty.waitAlerts(t, 1); len(oscs) != 0 {
		t.Errorf("escapes on a console: %q", oscs)
	}
}

// The operator's command runs for an ask, with its summary in the
// environment; its failure is said once, and serving goes on.
func TestPromptNotifyCmd(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("needs sh")
	}
	checkNoLeak(t)
	dir := t.TempDir()
	out := filepath.Join(dir, "env")
	script := filepath.Join(dir, "notify")
	if err := os.WriteFile(script, []byte("#!/bin/sh\nenv | grep '^COURIER_' | sort > \"$1.tmp\"; mv \"$1.tmp\" \"$1\"\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	errs := make(chan error, 4)
	tty := newFakeTTY(100, 30)
	p := start(tty, Options{Session: "parent", ArmDelay: -1, NotifyCmd: "'" + script + "' '" + out + "'",
		OnError: func(err error) { errs <- err }})
	defer p.Close()
	a := testAsk("reviewer", "git push --force", false)
	h := newHeldAsk()
	p.Hold(&a, h.done)
	select {
	case err := <-errs:
		if !strings.Contains(err.Error(), "exit status 1") {
			t.Errorf("the failure: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the command's failure was never said")
	}
	env, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"COURIER_ASK_AGENT=reviewer\n", "COURIER_ASK_ID=perm-reviewer\n", "COURIER_ASK_SESSION=child-reviewer\n",
		"COURIER_ASK_SUMMARY='reviewer' asks bash: git push --force\n", "COURIER_ASK_SURFACE=bash\n",
		"COURIER_ASKS_WAITING=1\n", "COURIER_SERVING_SESSION=parent\n",
	} {
		if !strings.Contains(string(env), want) {
			t.Errorf("the command's environment lacks %q:\n%s", want, env)
		}
	}
	tty.waitScreen(t, "git push --force")
	tty.press(t, "y")
	if d := h.fate(t); !d.Approved() {
		t.Errorf("answered %+v", d)
	}
}

// A bad --notify-cmd stops Open before it takes the terminal.
func TestOpenRefusesABadNotifyCmd(t *testing.T) {
	for _, cmd := range []string{"notify | mail", "no-such-program-courier-test --x"} {
		if p, err := Open(os.Stdin, Options{NotifyCmd: cmd}); err == nil || !strings.Contains(err.Error(), "--notify-cmd") {
			if p != nil {
				p.Close()
			}
			t.Errorf("Open with --notify-cmd %q: %v", cmd, err)
		}
	}
}
