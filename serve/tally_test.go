package serve

import (
	"context"
	"testing"
	"time"

	"github.com/seed6639df8c/courier/decision"
	"github.com/seed6639df8c/courier/provenance"
)

// tallyTerminal is a headless terminal that hears of every decision.
type tallyTerminal struct {
	Headless
	counted chan provenance.Source
}

func (t tallyTerminal) Counted(by provenance.Source) { t.counted <- by }

var _ Tally = tallyTerminal{}

// The prompt's "answered" count includes what it did not answer: the
// broker tells a Tally of every decision it writes, a rule's and the
// terminal's alike (issue 16: approvals by a session grant were left out).
func TestTallyHearsEveryDecision(t *testing.T) {
	term := tallyTerminal{counted: make(chan provenance.Source, 4)}
	f := newFixture(t, term)
	c := f.client()
	next := func(what string) provenance.Source {
		t.Helper()
		select {
		case by := <-term.counted:
			return by
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: not counted", what)
		}
		return nil
	}
	if d := c.Forward(t.Context(), ask(t, "git status --short")); !d.Approved() {
		t.Fatalf("rule: %+v", d)
	}
	if _, ok := next("a rule's allow").(provenance.Rule); !ok {
		t.Error("a rule's allow was not counted as the rule's")
	}
	if d := c.Forward(context.Background(), ask(t, "make deploy")); d.State == decision.StateApproved {
		t.Fatalf("terminal: %+v", d)
	}
	if by := next("the terminal's answer"); by == nil {
		t.Error("the terminal's answer was counted without its decider")
	}
}
