package prompt

import (
	"fmt"
	"time"
)

// The list of the asks waiting (l, from the first choice): one line each,
// in the order they would be shown (each requester in turn, see queue.go),
// with who asks, what, and the time left when a prompt timeout is set.
// ↑/↓ and page up/down move the cursor; enter shows the ask under it in
// place of the one on screen, which waits again at the front of its
// requester's asks and comes back once the picked one is answered (see
// queue.pick); esc, l or q go back. The list answers nothing, and the
// picked ask arms like any new one: a key pressed as it appears counts
// for nothing. The default order stays fair: picking moves one ask ahead,
// never a requester's whole flood.

// openList opens the list of the asks waiting, if any is.
func (m *machine) openList() {
	if m.waiting() == 0 {
		m.notice = "no other ask is waiting"
		return
	}
	m.stage, m.listAt, m.listPane = stageList, 0, pane{}
}

func (m *machine) pressList(k key, now time.Time) {
	last := m.waiting() - 1
	switch k.Code {
	case keyUp:
		m.listAt = max(m.listAt-1, 0)
	case keyDown:
		m.listAt = min(m.listAt+1, last)
	case keyEnter:
		m.pick(now)
	case keyEsc:
		m.stage = stageChoose
	case keyRune:
		switch k.Rune {
		case 'l', 'L', 'q', 'Q':
			m.stage = stageChoose
		}
	}
}

// pageList moves the list's cursor by a page.
func (m *machine) pageList(down bool) {
	page := max(m.listPane.page, 1)
	if down {
		m.listAt = min(m.listAt+page, m.waiting()-1)
	} else {
		m.listAt = max(m.listAt-page, 0)
	}
}

// pick shows the ask under the list's cursor; the one on screen waits
// again.
func (m *machine) pick(now time.Time) {
	got := m.q.inTurn(m.owner(), m.listAt, 1)
	if len(got) == 0 {
		m.stage = stageChoose
		return
	}
	was := m.cur
	m.q.pick(got[0], was)
	m.cur = got[0]
	m.show(now)
	m.notice = fmt.Sprintf("picked from the list: %s waits again, and comes back next", was.view.summary)
}

// listLines lays out the list in at most rows lines: a title, a window of
// it around the cursor, and a last line saying where the window is when
// the list does not fit.
func (m *machine) listLines(width, rows int, now time.Time) []line {
	n := m.waiting()
	m.listAt = min(max(m.listAt, 0), max(n-1, 0))
	title := fmt.Sprintf("  The %d asks waiting, from %d %s, in the order they come:", n, m.q.sessions, plural(m.q.sessions, "session", "sessions"))
	height := max(rows-2, 1)
	if n <= height {
		height = max(n, 1)
	}
	top := min(max(m.listPane.top, 0), max(n-height, 0))
	if m.listAt < top {
		top = m.listAt
	}
	if m.listAt >= top+height {
		top = m.listAt - height + 1
	}
	m.listPane = pane{top: top, page: height, last: max(n-height, 0), total: n}
	out := []line{{text: title}}
	for i, e := range m.q.inTurn(m.owner(), top, height) {
		at := top + i
		mark, sgr := "   ", ""
		if at == m.listAt {
			mark, sgr = "  ▸", sgrReverse
		}
		text := fmt.Sprintf("%s%5d  %s · %s", mark, at+1, e.from.label, e.view.summary)
		if left := timeLeft(e, now); left != "" {
			text += " · " + left
		}
		out = append(out, line{text: cut(text, width), sgr: sgr})
	}
	if n > height {
		out = append(out, line{text: fmt.Sprintf("  asks %d–%d of %d", top+1, top+height, n), sgr: sgrBold})
	}
	return out
}

// timeLeft says how long the ask has before the prompt timeout withdraws
// it, rounded up to the second; "" without a timeout.
func timeLeft(e *entry, now time.Time) string {
	if e.deadline.IsZero() {
		return ""
	}
	rem := e.deadline.Sub(now)
	if rem <= 0 {
		return "0s left"
	}
	secs := int((rem + time.Second - 1) / time.Second)
	if secs < 60 {
		return fmt.Sprintf("%ds left", secs)
	}
	return fmt.Sprintf("%dm%02ds left", secs/60, secs%60)
}

// nextTick is how long until the time left of the ask on screen changes
// as shown (it is shown in whole seconds), 0 when it does not.
func (m *machine) nextTick(now time.Time) time.Duration {
	e := m.cur
	if e == nil || e.deadline.IsZero() {
		return 0
	}
	rem := e.deadline.Sub(now)
	if rem <= 0 {
		return 0
	}
	if step := rem % time.Second; step > 0 {
		return step
	}
	return time.Second
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
