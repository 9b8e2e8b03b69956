package prompt

import (
	"strings"
	"testing"
	"time"
)

// timed pushes an ask with a deadline, as Hold does with a prompt
// timeout.
func timed(m *machine, agent, value string, deadline time.Time) *entry {
	e := newEntry(askFrom("child-"+agent, agent, value))
	e.deadline = deadline
	m.push(e, t0)
	return e
}

// The issue: no countdown when promptTimeoutMs is set. The header says
// how long the ask on screen has left, in whole seconds rounded up, and
// the list says it of every ask.
func TestCountdownShown(t *testing.T) {
	m := &machine{}
	timed(m, "alpha", "terraform apply", t0.Add(90*time.Second))
	tests := []struct {
		at   time.Duration
		want string
	}{
		{0, "── 1m30s left ──"},
		{500 * time.Millisecond, "── 1m30s left ──"},
		{time.Second, "── 1m29s left ──"},
		{31 * time.Second, "── 59s left ──"},
		{89*time.Second + time.Millisecond, "── 1s left ──"},
		{95 * time.Second, "── 0s left ──"},
	}
	for _, tt := range tests {
		text := frameText(m.frame(100, 30, "parent", t0.Add(tt.at)))
		if !strings.Contains(text, tt.want) {
			t.Errorf("at %s the header lacks %q:\n%s", tt.at, tt.want, text)
		}
	}
	timed(m, "beta", "make deploy", t0.Add(20*time.Second))
	text := frameText(m.frame(100, 30, "parent", t0.Add(5*time.Second)))
	if !strings.Contains(text, "── 1 more waiting, from 1 session · 1m25s left ──") {
		t.Errorf("with one waiting:\n%s", text)
	}
	pressAll(m, t0.Add(5*time.Second), char('l'))
	if text := frameText(m.frame(100, 30, "parent", t0.Add(5*time.Second))); !strings.Contains(text, "'beta' make deploy · 15s left") {
		t.Errorf("the list:\n%s", text)
	}
	// Without a timeout, no countdown.
	plain := &machine{}
	plain.push(newEntry(askFrom("s", "gamma", "ls")), t0)
	if text := frameText(plain.frame(100, 30, "parent", t0)); strings.Contains(text, "left") {
		t.Errorf("a countdown without a timeout:\n%s", text)
	}
	if plain.nextTick(t0) != 0 {
		t.Errorf("a tick without a timeout")
	}
}

// The countdown is cheap: the loop wakes when the shown seconds change,
// not more, and a tick rewrites one line of the frame.
func TestCountdownTicksCheaply(t *testing.T) {
	m := &machine{}
	timed(m, "alpha", "terraform apply", t0.Add(42*time.Second+300*time.Millisecond))
	if got := m.nextTick(t0); got != 300*time.Millisecond {
		t.Errorf("next tick in %s, want 300ms", got)
	}
	if got := m.nextTick(t0.Add(300 * time.Millisecond)); got != time.Second {
		t.Errorf("on a second: next tick in %s, want 1s", got)
	}
	if got := m.nextTick(t0.Add(time.Minute)); got != 0 {
		t.Errorf("past the deadline: next tick in %s, want none", got)
	}
	var s screen
	first := s.draw(m.frame(100, 28, "parent", t0), 100, 30)
	second := s.draw(m.frame(100, 28, "parent", t0.Add(time.Second)), 100, 30)
	if lines := strings.Count(second, "\x1b[2K"); lines != 1 || !strings.Contains(second, "42s left") {
		t.Errorf("a tick rewrote %d lines (the first frame %d):\n%q", lines, strings.Count(first, "\x1b[2K"), second)
	}
	if again := s.draw(m.frame(100, 28, "parent", t0.Add(1100*time.Millisecond)), 100, 30); again != "" {
		t.Errorf("an unchanged frame was redrawn: %q", again)
	}
}

// End to end, on the prompt's own clock: Hold sets the deadline from
// PromptTimeout, and the countdown moves by itself.
func TestPromptCountdown(t *testing.T) {
	checkNoLeak(t)
	tty := newFakeTTY(100, 30)
	p := start(tty, Options{Session: "parent", ArmDelay: -1, PromptTimeout: 3 * time.Second})
	defer p.Close()
	a := testAsk("alpha", "terraform apply", false)
	h := newHeldAsk()
	p.Hold(&a, h.done)
	tty.waitScreen(t, "── 3s left ──")
	tty.waitScreen(t, "── 2s left ──")
	tty.press(t, "n")
	if d := h.fate(t); d.Unavailable() {
		t.Errorf("answered: %+v", d)
	}
}
