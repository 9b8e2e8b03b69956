package prompt

import (
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/seed6639df8c/courier/decision"
	"github.com/seed6639df8c/courier/provenance"
	"github.com/seed6639df8c/courier/wire"
)

// maxReason caps the typed denial reason, in characters.
const maxReason = 500

// stage is where the operator is in answering the ask on screen.
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
	// stageWhole is the whole ask in a window the operator scrolls, from
	// the first choice or the scope choice (see whole.go).
	stageWhole
	// stageDenyAll asks the operator to confirm denying every ask of the
	// requester on screen (see denyall.go).
	stageDenyAll
	// stageList is the list of the asks waiting, which the operator moves
	// through and picks one from (see list.go).
	stageList
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

// Decider is the decider of every answer the operator gives at this
// prompt. On the wire it is a member of seed 000's union as pi reads it:
// the tty prompt is a dialog. That the answer came from courier's tty
// prompt goes in courier's own review-log field (decision.Decision's
// Terminal, TerminalTTY), never in the union.
var Decider = provenance.User{Via: provenance.ViaDialog}

// forSubagent is "yes, for this session" scoped to the asking subagent:
// the child records the grant, at the proven width (the least privilege,
// and what the operator was shown), stated rather than left implicit.
var forSubagent = decision.Decision{
	State: decision.StateApprovedForSession, DecidedBy: Decider, SessionGrantWidth: wire.GrantProven,
}

// answer is an ask the operator answered and its decision.
type answer struct {
	e *entry
	d decision.Decision
}

// machine is the prompt's state: the queue of asks and where the operator
// is in answering the one on screen. It is pure (no I/O, no clock of its
// own, no goroutines), so every key sequence can be tested without a
// terminal.
type machine struct {
	// cur is the ask on screen; q holds those waiting, a fair queue.
	cur   *entry
	q     queue
	stage stage
	// cursor is the highlighted option of the current choice.
	cursor int
	// reason is the denial reason typed so far.
	reason []rune
	// grants are the whole-session grants as the operator edited them;
	// nil means those the broker admitted. edit is the edit in progress.
	grants []wire.SuggestedGrant
	edit   grantEdit
	// home is the directory that `~` and `$HOME` in a pattern expand to
	// when an edited pattern is checked, as in the broker's rules.
	home string
	// scroll is the first line of the units field on screen; units is
	// what the last frame made of that field, for the scroll keys.
	scroll int
	units  pane
	// grantTop, grantPane and seen are the same for the list of grants in
	// the scope choice, and how much of it has been on screen (see
	// scope.go): the whole session is chosen only once all of it was.
	grantTop  int
	grantPane pane
	seen      seenLines
	// wholeTop, whole and back are the window of the whole view and the
	// stage it returns to.
	wholeTop int
	whole    pane
	back     stage
	// denyUpTo is the last ask a deny-all being confirmed covers.
	denyUpTo uint64
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
	// listAt is the ask the list of those waiting has the cursor on, in
	// the order they come; listPane is the list's window as last drawn.
	listAt   int
	listPane pane
	// recent are the last asks that left the screen, oldest first, and
	// tally counts every decision of the run (see history.go).
	recent []record
	tally  tally
}

func (m *machine) head() *entry { return m.cur }

// waiting is how many asks wait behind the one on screen.
func (m *machine) waiting() int { return m.q.waiting }

// held is how many asks the prompt holds, the one on screen included.
func (m *machine) held() int {
	if m.cur == nil {
		return m.q.waiting
	}
	return m.q.waiting + 1
}

// armed reports whether keys count at now.
func (m *machine) armed(now time.Time) bool {
	return !now.Before(m.armedAt)
}

// owner is the requester of the ask on screen, nil when none is.
func (m *machine) owner() *requester {
	if m.cur == nil {
		return nil
	}
	return m.cur.owner
}

// push queues an ask; if nothing was on screen, it is shown at once.
func (m *machine) push(e *entry, now time.Time) {
	e.queued = true
	m.q.add(e)
	if m.cur == nil {
		m.advance(nil, now)
	}
}

// advance shows the next ask, in turn, once the one of done left the
// screen (nil: none was on screen).
func (m *machine) advance(done *requester, now time.Time) {
	m.cur = m.q.next(done)
	if m.cur != nil {
		m.show(now)
	}
}

// drain empties the queue and returns what it held, the ask on screen
// first.
func (m *machine) drain() []*entry {
	var out []*entry
	if m.cur != nil {
		out = append(out, m.cur)
		m.cur = nil
	}
	out = append(out, m.q.drain()...)
	for _, e := range out {
		e.queued = false
	}
	return out
}

// show resets the dialog for a new ask on screen.
func (m *machine) show(now time.Time) {
	m.stage, m.cursor, m.reason = stageChoose, 0, nil
	m.grants, m.edit = nil, grantEdit{}
	m.scroll, m.units = 0, pane{}
	m.resetGrantPane()
	m.wholeTop, m.whole = 0, pane{}
	m.armedAt = now.Add(m.armDelay)
}

// withdraw takes an ask out of the queue without an answer (its requester
// gave up, the prompt timed out); why says so to the operator if it was on
// screen. It reports whether the ask was still queued.
func (m *machine) withdraw(e *entry, why string, now time.Time) bool {
	if !e.queued {
		return false
	}
	e.queued = false
	if e != m.cur {
		m.q.remove(e, m.owner())
		return true
	}
	m.cur = nil
	m.grants, m.edit = nil, grantEdit{}
	m.notice = fmt.Sprintf("the ask from %s left the queue: %s", e.view.summary, why)
	m.remember(record{at: now, how: "left unanswered (" + cut(why, 40) + ")", what: e.view.summary})
	m.advance(e.owner, now)
	return true
}

// conclude answers the ask on screen with d and shows the next.
func (m *machine) conclude(d decision.Decision, now time.Time) []answer {
	e := m.cur
	e.queued, m.cur = false, nil
	m.tally.you++
	m.remember(record{at: now, how: howAnswered(d), what: e.view.summary})
	m.grants, m.edit = nil, grantEdit{}
	m.advance(e.owner, now)
	return []answer{{e, d}}
}

// press applies one key and returns the asks it answered (they have left
// the queue, and the next ask is on screen).
func (m *machine) press(k key, now time.Time) []answer {
	e := m.cur
	if e == nil {
		return nil
	}
	if k.Code == keyPageUp || k.Code == keyPageDown {
		// Scrolling answers nothing, so it counts at once, in any stage.
		m.scrollPage(k.Code == keyPageDown)
		return nil
	}
	if m.stage == stageWhole {
		// Nor does anything in the whole view.
		m.notice = ""
		m.pressWhole(k)
		return nil
	}
	if m.stage == stageList {
		// Nor in the list: picking shows an ask, which then arms anew.
		m.notice = ""
		m.pressList(k, now)
		return nil
	}
	if !m.armed(now) {
		m.notice = "ignored a key pressed as this ask appeared"
		return nil
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
	case stageDenyAll:
		return m.pressDenyAll(k, now)
	}
	if !done {
		return nil
	}
	return m.conclude(d, now)
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
		switch k.Rune {
		case 'v', 'V':
			m.openWhole()
			return decision.Decision{}, false
		case 'D':
			m.startDenyAll()
			return decision.Decision{}, false
		case 'l', 'L':
			m.openList()
			return decision.Decision{}, false
		}
		for i, a := range answers {
			if unicode.ToLower(k.Rune) == a.key {
				pick = i
			}
		}
	}
	switch pick {
	case optOnce:
		return decision.Allow(Decider), true
	case optSession:
		if !e.grantable() {
			// Nothing the whole session could record: pi offers no second
			// choice and the child records its own grant.
			return forSubagent, true
		}
		m.stage, m.cursor = stageScope, scopeSubagent
		m.resetGrantPane()
	case optDeny:
		return decision.Deny("", Decider), true
	case optReason:
		m.stage, m.reason = stageReason, nil
	}
	return decision.Decision{}, false
}

// scrollPage moves a scrolling window by a page, as the last frame laid
// it out: the whole view's when it is open, the grants' in the scope
// choice when they need scrolling, else the units'.
func (m *machine) scrollPage(down bool) {
	switch {
	case m.stage == stageWhole:
		m.wholeTop = pageFrom(&m.whole, down)
	case m.stage == stageList:
		m.pageList(down)
	case m.stage == stageScope && m.grantPane.last > 0:
		m.grantTop = pageFrom(&m.grantPane, down)
	default:
		m.scroll = pageFrom(&m.units, down)
	}
}

// pageFrom moves p by a page and returns its new top. Several keys may
// come before the next frame: each moves on from where the last one left
// the pane.
func pageFrom(p *pane, down bool) int {
	page := max(p.page, 1)
	top := max(p.top-page, 0)
	if down {
		top = min(p.top+page, p.last)
	}
	p.top = top
	return top
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
		case 'v', 'V':
			m.openWhole()
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
		if !m.grantsSeen() {
			// Nothing is recorded that the operator was not shown.
			m.cursor = scopeWhole
			m.notice = fmt.Sprintf("the whole session records all %d grants listed: page down (pgdn) to the last one first",
				len(m.wholeGrants(e)))
			return decision.Decision{}, false
		}
		d := decision.Decision{State: decision.StateApprovedForServingSession, DecidedBy: Decider}
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
		return decision.Deny(reason, Decider), true
	case keyRune:
		if len(m.reason) < maxReason && typable(k.Rune) {
			m.reason = append(m.reason, k.Rune)
		}
	}
	return decision.Decision{}, false
}

// typable reports whether r may be typed into the prompt's text: a space
// or a printing character, never a control, a format character or
// another invisible one.
func typable(r rune) bool {
	return r == ' ' || (unicode.IsPrint(r) && !invisible(r))
}
