package prompt

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/seed6639df8c/courier/provenance"
)

// The issue: the next ask replaced the one just answered with no trace
// of the answer. The last three asks that left the screen stay above
// the frame, one line each: when, how, who and what.
func TestRecentAnswersShown(t *testing.T) {
	m := &machine{}
	for _, a := range [][2]string{{"first", "make release"}, {"second", "rm -rf dist"}, {"third", "npm publish"}, {"fourth", "git push"}, {"fifth", "ls"}} {
		m.push(newEntry(testAsk(a[0], a[1], true)), t0)
	}
	pressAll(m, t0, char('y'))
	pressAll(m, t0.Add(time.Second), char('n'))
	text := frameText(m.frame(100, 40, "parent", t0))
	for _, want := range []string{
		"  03:04:05  yes, once · 'first' make release\n",
		"  03:04:06  no · 'second' rm -rf dist\n",
		"── Permission Required (Subagent)",
	} {
		if !strings.Contains(text, want) {
			t.Fatalf("the frame lacks %q:\n%s", want, text)
		}
	}
	if strings.Index(text, "yes, once") > strings.Index(text, "Permission Required") {
		t.Errorf("the recent asks are not above the frame:\n%s", text)
	}
	t1 := t0.Add(time.Second)
	pressAll(m, t1, char('r'))
	pressAll(m, t1, runes("use the release branch\x1b[2J")...)
	pressAll(m, t1, enter)
	m.withdraw(m.head(), "prompt timeout", t1)
	text = frameText(m.frame(100, 40, "parent", t1))
	for _, want := range []string{
		"no · 'second' rm -rf dist",
		"no: use the release branch[2J · 'third' npm publish",
		"left unanswered (prompt timeout) · 'fourth' git push",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("the frame lacks %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, "'first' make release") {
		t.Errorf("more than three recent asks:\n%s", text)
	}
	// The last one answered stays on the idle line's frame too.
	pressAll(m, t1, char('s'), char('1'))
	text = frameText(m.frame(100, 40, "parent", t1))
	if !strings.Contains(text, "yes, for this session (this subagent only) · 'fifth' ls") || !strings.Contains(text, "no asks waiting") {
		t.Errorf("idle:\n%s", text)
	}
}

// The recent asks never take room from the ask: they fill the rows the
// frame leaves, and on a short screen they are left out.
func TestRecentAnswersGiveWay(t *testing.T) {
	m := &machine{}
	m.push(newEntry(testAsk("first", "make release", true)), t0)
	m.push(newEntry(testAsk("second", "rm -rf dist", true)), t0)
	m.push(newEntry(testAsk("third", "ls", true)), t0)
	pressAll(m, t0, char('y'))
	pressAll(m, t0, char('y'))
	for rows := 6; rows <= 40; rows++ {
		body := frameText(m.frameBody(100, rows, "parent", t0))
		all := m.frame(100, rows, "parent", t0)
		if len(all) > rows || !strings.HasSuffix(frameText(all), body) {
			t.Fatalf("%d rows: the recent asks took room from the ask:\n%s", rows, frameText(all))
		}
	}
	if text := frameText(m.frame(100, 13, "parent", t0)); strings.Contains(text, "yes, once") {
		t.Errorf("a short screen:\n%s", text)
	}
	if text := frameText(m.frame(100, 40, "parent", t0)); !strings.Contains(text, "yes, once · 'first' make release") {
		t.Errorf("a tall screen:\n%s", text)
	}
}

// The issue: the "answered" count left out approvals by a session grant.
// The broker tells the prompt of every decision (serve.Tally): the idle
// line counts them all, by who decided; the operator's own are counted
// once.
func TestTallyCountsEveryDecision(t *testing.T) {
	checkNoLeak(t)
	tty := newFakeTTY(120, 20)
	p := start(tty, Options{Session: "parent", ArmDelay: -1})
	defer p.Close()
	ask := decideAsync(context.Background(), p, testAsk("alpha", "git push", false))
	tty.waitScreen(t, "or press y s n r")
	tty.press(t, "y")
	receive(t, ask)
	p.Counted(provenance.User{Via: provenance.ViaDialog}) // the broker writing the answer just given
	p.Counted(provenance.SessionApproval{Surface: "bash", Pattern: provenance.Str("git status *")})
	p.Counted(provenance.SessionApproval{Surface: "bash", Pattern: provenance.Str("git status *")})
	p.Counted(provenance.Rule{Surface: "bash", Pattern: provenance.Str("ls *")})
	p.Counted(provenance.Unavailable{Reason: "Nobody answered the prompt within 1s"})
	p.Counted(nil)
	tty.waitScreen(t, "no asks waiting · 4 answered · 1 unanswered ──")
	tty.waitScreen(t, "\n  answered 1 by you, 1 by a rule, 2 by a session grant\n")
}

func TestTallyString(t *testing.T) {
	var tl tally
	if got, who := tl.String(), tl.breakdown(); got != "0 answered" || who != "" {
		t.Errorf("empty: %q, %q", got, who)
	}
	tl.you = 2
	if got, who := tl.String(), tl.breakdown(); got != "2 answered" || who != "" {
		t.Errorf("only the operator's: %q, %q", got, who)
	}
	tl.add(provenance.Authorizer{})
	tl.add(provenance.GateError{Reason: "x"})
	tl.add(provenance.Unavailable{})
	if got, who := tl.String(), tl.breakdown(); got != "4 answered · 1 unanswered" || who != "2 by you, 1 by the authorizer chain, 1 failed (gate error)" {
		t.Errorf("%q, %q", got, who)
	}
}

// A withdrawn ask on screen leaves its trace with why.
func TestRecentWithdrawn(t *testing.T) {
	tty := newFakeTTY(100, 30)
	p := start(tty, Options{Session: "parent", ArmDelay: -1})
	defer p.Close()
	ctx, cancel := context.WithCancelCause(context.Background())
	gone := decideAsync(ctx, p, testAsk("alpha", "rm -rf build", true))
	tty.waitScreen(t, "rm -rf build")
	cancel(errors.New("the requester gave up"))
	receive(t, gone)
	tty.waitScreen(t, "left unanswered (the requester gave up) · 'alpha' rm -rf build")
}
