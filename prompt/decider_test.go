package prompt

import (
	"context"
	"strings"
	"testing"

	"github.com/seed6639df8c/courier/decision"
	"github.com/seed6639df8c/courier/provenance"
	"github.com/seed6639df8c/courier/wire"
)

// TestPromptAnswersAreDialogs pins issue 15 §2 at the prompt: every answer
// the operator gives is decided by {kind: user, via: dialog}, seed 000's
// literal that a pi 25.x child reads, and never by "terminal"; that the tty
// prompt gave it travels beside, in the decision's Terminal, for the
// broker's review log, and never reaches the wire.
func TestPromptAnswersAreDialogs(t *testing.T) {
	checkNoLeak(t)
	tty := newFakeTTY(100, 30)
	p := start(tty, Options{Session: "parent", ArmDelay: -1})
	defer p.Close()

	// Each answer's keys, a step at a time: a step's keys are pressed
	// once the screen shows what the step before opened.
	tests := []struct {
		keys  []string
		state decision.State
	}{
		{[]string{"y"}, decision.StateApproved},
		{[]string{"n"}, decision.StateDenied},
		{[]string{"r", "reason >", "not now\r"}, decision.StateDeniedWithReason},
		{[]string{"s", "This subagent ('alpha') only", "\x1b"}, decision.StateApprovedForSession},
		{[]string{"s", "The whole session", "\x1b[B\r"}, decision.StateApprovedForServingSession},
	}
	for i, tt := range tests {
		value := "make step-" + string(rune('a'+i))
		ch := decideAsync(context.Background(), p, testAsk("alpha", value, true))
		tty.waitScreen(t, value)
		for j := 0; j < len(tt.keys); j += 2 {
			if j > 0 {
				tty.waitScreen(t, tt.keys[j-1])
			}
			tty.press(t, tt.keys[j])
		}
		d := receive(t, ch)
		if d.State != tt.state {
			t.Fatalf("%q: state %s, want %s", tt.keys, d.State, tt.state)
		}
		if d.DecidedBy != (provenance.User{Via: provenance.ViaDialog}) || d.Terminal != TerminalTTY {
			t.Errorf("%q: decided by %#v at terminal %q, want user via dialog at %q", tt.keys, d.DecidedBy, d.Terminal, TerminalTTY)
		}
		data, err := wire.EncodeResponse(d.Response("parent", 1))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(data), `"decidedBy":{"kind":"user","via":"dialog"}`) || strings.Contains(string(data), "terminal") || strings.Contains(string(data), "tty") {
			t.Errorf("%q: the response says %s", tt.keys, data)
		}
	}

	// What the prompt answers without the operator says the tty too.
	pending := decideAsync(context.Background(), p, testAsk("beta", "deploy", true))
	tty.waitScreen(t, "deploy")
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if d := receive(t, pending); !d.Unavailable() || d.Terminal != TerminalTTY {
		t.Errorf("an ask pending at Close: %+v", d)
	}
}
