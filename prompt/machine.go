package prompt

import (
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/seed6639df8c/courier/decision"
	"github.com/seed6639df8c/courier/provenance"
	"github.com/seed6639df8c/courier/serve"
	"github.com/seed6639df8c/courier/wire"
)

// maxReason caps the typed denial reason, in characters.
const maxReason = 500

// stage is where the operator is in answering the ask at the head.
type stage int

const (
	// stageChoose is pi's four-option dialog.
	stageChoose stage = iota
	// stageScope is the second choice after "yes, for this session" on an
	// ask that carries grants: this subagent only, or the whole session.
	stageScope
	// stageReason is typing the reason of a denial.
	stageReason
	// stageEdit is editing the patterns the whole session would record,
	// from the scope choice (see grantedit.go).
	stageEdit
)

// option is one answer of a choice: its key and its label.
type option struct {
	key   rune
	label string
}

// The four answers, in pi's order.
const (
	optOnce = iota
	optSession
	optDeny
	optReason
)

var answers = [...]option{
	optOnce:    {'y', "Yes, once"},
	optSession: {'s', "Yes, for this session"},
	optDeny:    {'n', "No"},
	optReason:  {'r', "No, with a reason"},
}

// The two scopes of a session grant; the subagent is first, the default.
const (
	scopeSubagent = iota
	scopeWhole
)

func scopeLabels(agent string) [2]option {
	return [2]option{
		scopeSubagent: {'1', fmt.Sprintf("This subagent ('%s') only", agent)},
		scopeWhole:    {'2', "The whole session (parent + all subagents)"},
	}
}

// byTerminal is the decider of every answer given at this prompt.
var byTerminal = provenance.User{Via: provenance.ViaTerminal}

// forSubagent is "yes, for this session" scoped to the asking subagent:
// the child records the grant, at the proven width (the least privilege,
// and what the operator was shown), stated rather than left implicit.
var forSubagent = decision.Decision{
	State: decision.StateApprovedForSession, DecidedBy: byTerminal, SessionGrantWidth: wire.GrantProven,
}

// entry is one ask waiting for the operator. It keeps the ask and nothing
// made from it until the ask reaches the screen: thousands may wait.
type entry struct {
	// ask is the broker's (see serve.Holder): read, never written.
	ask *serve.Ask
	// view is made when the ask reaches the screen (show).
	view *view
	// done hears the ask's fate, once: whoever takes the entry out of the
	// queue (an answer, a withdrawal, Close) calls it, outside the lock.
	done func(decision.Decision)
	// prev and next link the queue; queued says the entry is in it.
	prev, next *entry
	queued     bool
}

func newEntry(ask serve.Ask) *entry { return &entry{ask: &ask} }

// grantable reports whether "yes, for this session" offers the scope
// choice: only when the child said what a session grant would record.
func (e *entry) grantable() bool { return len(e.suggested()) > 0 }

// suggested returns the session grants the child suggested, nil when none.
func (e *entry) suggested() []wire.SuggestedGrant {
	if sa := e.ask.Request.SessionApproval; sa != nil {
		return sa.Grants
	}
	return nil
}

// machine is the prompt's state: the queue of asks and where the operator
// is in answering the first. It is pure (no I/O, no clock of its own, no
// goroutines), so every key sequence can be tested without a terminal.
type machine struct {
	// first and last end the queue of asks, a list in arrival order; the
	// first is on screen. A list, so that an ask anywhere in a queue of
	// thousands leaves it at once.
	first, last *entry
	length      int
	stage       stage
	// cursor is the highlighted option of the current choice.
	cursor int
	// reason is the denial reason typed so far.
	reason []rune
	// grants are the whole-session grants as the operator edited them;
	// nil means the child's suggestion. edit is the edit in progress.
	grants []wire.SuggestedGrant
	edit   grantEdit
	// home is the directory that `~` and `$HOME` in a pattern expand to
	// when an edited pattern is checked, as in the broker's rules.
	home string
	// scroll is the first line of the units field on screen; units is
	// what the last frame made of that field, for the scroll keys.
	scroll int
	units  pane
	// notice is a one-line message for the operator (a key that was
	// ignored, a reason that is required, an ask that left the queue),
	// shown until the next key press.
	notice string
	// armDelay is how long keys are ignored after a new ask appears, so
	// that a key meant for the previous ask (a double press, or an ask
	// that disappeared under the operator's finger) never answers this one.
	armDelay time.Duration
	// armedAt is when keys start to count for the ask on screen.
	armedAt time.Time
	// answered counts the operator's answers, for the idle line.
	answered int
}

func (m *machine) head() *entry { return m.first }

// waiting is how many asks wait behind the one on screen.
func (m *machine) waiting() int { return max(m.length-1, 0) }

// armed reports whether keys count at now.
func (m *machine) armed(now time.Time) bool {
	return !now.Before(m.armedAt)
}

// push queues an ask; if nothing was on screen, it is shown at once.
func (m *machine) push(e *entry, now time.Time) {
	e.prev, e.next, e.queued = m.last, nil, true
	if m.last != nil {
		m.last.next = e
	} else {
		m.first = e
	}
	m.last = e
	m.length++
	if m.first == e {
		m.show(now)
	}
}

// unlink takes e out of the queue.
func (m *machine) unlink(e *entry) {
	if e.prev != nil {
		e.prev.next = e.next
	} else {
		m.first = e.next
	}
	if e.next != nil {
		e.next.prev = e.prev
	} else {
		m.last = e.prev
	}
	e.prev, e.next, e.queued = nil, nil, false
	m.length--
}

// drain empties the queue and returns what it held, in order.
func (m *machine) drain() []*entry {
	out := make([]*entry, 0, m.length)
	for m.first != nil {
		e := m.first
		m.unlink(e)
		out = append(out, e)
	}
	return out
}

// show resets the dialog for a new ask at the head and describes it: the
// strings of an ask are cleaned and laid out only once it is on screen.
func (m *machine) show(now time.Time) {
	m.stage, m.cursor, m.reason = stageChoose, 0, nil
	m.grants, m.edit = nil, grantEdit{}
	m.scroll, m.units = 0, pane{}
	m.armedAt = now.Add(m.armDelay)
	if e := m.first; e != nil && e.view == nil {
		v := describe(*e.ask)
		e.view = &v
	}
}

// withdraw takes an ask out of the queue without an answer (its requester
// gave up, the prompt timed out); why says so to the operator if it was on
// screen. It reports whether the ask was still queued.
func (m *machine) withdraw(e *entry, why string, now time.Time) bool {
	if !e.queued {
		return false
	}
	onScreen := e == m.first
	m.unlink(e)
	if onScreen {
		m.grants, m.edit = nil, grantEdit{}
		m.notice = fmt.Sprintf("the ask from %s left the queue: %s", e.view.summary, why)
		if m.first != nil {
			m.show(now)
		}
	}
	return true
}

// press applies one key. When it answers the ask on screen, it returns
// that ask and the decision, the ask has left the queue and the next one
// is on screen.
func (m *machine) press(k key, now time.Time) (*entry, decision.Decision, bool) {
	e := m.head()
	if e == nil {
		return nil, decision.Decision{}, false
	}
	if k.Code == keyPageUp || k.Code == keyPageDown {
		// Scrolling answers nothing, so it counts at once, in any stage.
		m.scrollUnits(k.Code == keyPageDown)
		return nil, decision.Decision{}, false
	}
	if !m.armed(now) {
		m.notice = "ignored a key pressed as this ask appeared"
		return nil, decision.Decision{}, false
	}
	m.notice = ""
	var d decision.Decision
	var done bool
	switch m.stage {
	case stageChoose:
		d, done = m.pressChoose(k, e)
	case stageScope:
		d, done = m.pressScope(k, e)
	case stageReason:
		d, done = m.pressReason(k)
	case stageEdit:
		m.pressEdit(k, e)
	}
	if !done {
		return nil, decision.Decision{}, false
	}
	m.unlink(e)
	m.answered++
	m.grants, m.edit = nil, grantEdit{}
	if m.first != nil {
		m.show(now)
	}
	return e, d, true
}

func (m *machine) pressChoose(k key, e *entry) (decision.Decision, bool) {
	pick := -1
	switch k.Code {
	case keyUp:
		m.cursor = (m.cursor + len(answers) - 1) % len(answers)
	case keyDown:
		m.cursor = (m.cursor + 1) % len(answers)
	case keyEnter:
		pick = m.cursor
	case keyEsc:
		m.notice = "choose an answer: y, s, n or r (or move with ↑/↓ and press enter)"
	case keyRune:
		for i, a := range answers {
			if unicode.ToLower(k.Rune) == a.key {
				pick = i
			}
		}
	}
	switch pick {
	case optOnce:
		return decision.Allow(byTerminal), true
	case optSession:
		if !e.grantable() {
			// Nothing to scope: pi offers no second choice and the child
			// records its own grant.
			return forSubagent, true
		}
		m.stage, m.cursor = stageScope, scopeSubagent
	case optDeny:
		return decision.Deny("", byTerminal), true
	case optReason:
		m.stage, m.reason = stageReason, nil
	}
	return decision.Decision{}, false
}

// scrollUnits moves the units field on screen by a page, as the last
// frame laid it out.
func (m *machine) scrollUnits(down bool) {
	page := max(m.units.page, 1)
	top := max(m.units.top-page, 0)
	if down {
		top = min(m.units.top+page, m.units.last)
	}
	// Several keys may come before the next frame: each moves on from
	// where the last one left the pane.
	m.scroll, m.units.top = top, top
}

func (m *machine) pressScope(k key, e *entry) (decision.Decision, bool) {
	pick := -1
	switch k.Code {
	case keyUp, keyDown:
		m.cursor = 1 - m.cursor
	case keyEnter:
		pick = m.cursor
	case keyEsc:
		// Cancelling the scope choice is the least privilege: this
		// subagent only (docs/GLOSSARY.md, "grant").
		pick = scopeSubagent
	case keyRune:
		switch k.Rune {
		case '1':
			pick = scopeSubagent
		case '2':
			pick = scopeWhole
		case 'e', 'E':
			// Only the whole session's grants can be edited: the wire
			// answer carries no grants, so the child records its own
			// request's suggestion.
			m.startEdit(e)
		}
	}
	switch pick {
	case scopeSubagent:
		return forSubagent, true
	case scopeWhole:
		d := decision.Decision{State: decision.StateApprovedForServingSession, DecidedBy: byTerminal}
		if m.grants != nil {
			d.Grants = slices.Clone(m.grants)
		}
		return d, true
	}
	return decision.Decision{}, false
}

func (m *machine) pressReason(k key) (decision.Decision, bool) {
	switch k.Code {
	case keyEsc:
		m.stage, m.cursor, m.reason = stageChoose, optReason, nil
	case keyBackspace:
		if len(m.reason) > 0 {
			m.reason = m.reason[:len(m.reason)-1]
		}
	case keyKillLine:
		m.reason = nil
	case keyEnter:
		reason := strings.TrimSpace(string(m.reason))
		if reason == "" {
			m.notice = "a reason is required (esc goes back)"
			return decision.Decision{}, false
		}
		return decision.Deny(reason, byTerminal), true
	case keyRune:
		if len(m.reason) < maxReason && typable(k.Rune) {
			m.reason = append(m.reason, k.Rune)
		}
	}
	return decision.Decision{}, false
}

// typable reports whether r may be typed into the prompt's text: a space
// or a printing character, never a control or a format character.
func typable(r rune) bool {
	return (r == ' ' || unicode.IsPrint(r)) && !unicode.Is(unicode.Cf, r)
}
