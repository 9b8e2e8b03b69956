package prompt

import (
	"fmt"
	"os"
	"time"

	"github.com/seed6639df8c/courier/notify"
	"github.com/seed6639df8c/courier/provenance"
	"github.com/seed6639df8c/courier/serve"
)

// Noticing: an ask that reaches the prompt, shown or queued, rings the
// bell and asks the terminal for a desktop notification (written by the
// loop with its next frame, never in the middle of one), and goes to the
// desktop and the operator's command when they are there; at most one of
// each a second, a flood counted into one (see notify).
// docs/decisions/0018-noticing-asks.md.

var _ serve.Tally = (*Prompt)(nil)

// startNotifier starts the notifier of the prompt's options. The command
// was checked by Open; should it fail now (its program gone since), the
// prompt serves without it and says so.
func (p *Prompt) startNotifier(opts Options) {
	p.getenv = opts.Getenv
	if p.getenv == nil {
		p.getenv = os.Getenv
	}
	nopts := notify.Options{
		Terminal: p.tellTerminal, Desktop: opts.Desktop, Command: opts.NotifyCmd,
		Serving: opts.Session, OnError: opts.OnError, Getenv: p.getenv,
	}
	n, err := notify.Start(nopts)
	if err != nil {
		if opts.OnError != nil {
			opts.OnError(fmt.Errorf("prompt: %w; serving without it", err))
		}
		nopts.Command = ""
		n, _ = notify.Start(nopts)
	}
	p.notes = n
}

// tellTerminal has the loop write the alert of a batch with its next
// frame. An alert not yet written is replaced: the new one counts its
// asks too.
func (p *Prompt) tellTerminal(b notify.Batch) {
	a := notify.TerminalAlert(b, p.getenv)
	p.mu.Lock()
	p.alert = a
	p.mu.Unlock()
	p.poke()
}

// noteOf is the notification of a held ask, from its cleaned view and
// the request's short fields; held is how many asks the prompt holds.
func noteOf(ask *serve.Ask, e *entry, held int) notify.Note {
	req := &ask.Request
	surface := req.Surface
	value := req.Value
	if intent := req.AccessIntent; intent != nil {
		if surface == "" {
			surface = intent.Surface
		}
		if value == "" && len(intent.MatchValues) > 0 {
			value = intent.MatchValues[0]
		}
	}
	s := Clean(surface, capShort)
	return notify.Note{
		ID: Clean(req.ID, capShort), Agent: e.view.agent, Session: Clean(req.RequesterSessionID, capShort), Surface: s,
		Summary: fmt.Sprintf("'%s' asks %s: %s", e.view.agent, s, Clean(value, 100)),
		Waiting: held,
	}
}

// Counted implements serve.Tally: the broker tells the prompt of every
// decision it made, which the idle line counts. The operator's own
// answers (decided by a user) are counted when given, not again here.
func (p *Prompt) Counted(by provenance.Source) {
	if by == nil || by.Kind() == provenance.KindUser {
		return
	}
	p.mu.Lock()
	p.m.tally.add(by)
	p.mu.Unlock()
	p.pokeSoon()
}

// countRedraw is how often, at most, counts alone redraw the frame: a
// flood the rules answer must not keep the terminal busy.
const countRedraw = 100 * time.Millisecond

// pokeSoon wakes the loop within countRedraw; it never blocks.
func (p *Prompt) pokeSoon() {
	if p.soon.CompareAndSwap(false, true) {
		time.AfterFunc(countRedraw, func() {
			p.soon.Store(false)
			p.poke()
		})
	}
}
