package prompt

import (
	"fmt"
	"strings"
)

// The whole view shows all the prompt kept of the ask on screen (v, from
// the first choice or the scope choice): the value in full (up to what
// the prompt keeps, see kept.go, with a marker where it dropped any), the
// child's message and its evidence, in a window that ↑/↓ and page up/down
// scroll. It answers nothing; esc, v, q or enter go back where it was
// opened.

// wholeIndent indents the value in the whole view, so that no line of it
// starts where the broker's own fields do.
const wholeIndent = 4

// openWhole opens the whole view from the current stage.
func (m *machine) openWhole() {
	m.back, m.stage = m.stage, stageWhole
	m.wholeTop, m.whole = 0, pane{}
}

func (m *machine) pressWhole(k key) {
	switch k.Code {
	case keyUp:
		m.wholeTop = max(m.whole.top-1, 0)
		m.whole.top = m.wholeTop
	case keyDown:
		m.wholeTop = min(m.whole.top+1, m.whole.last)
		m.whole.top = m.wholeTop
	case keyEsc, keyEnter:
		m.stage = m.back
	case keyRune:
		switch k.Rune {
		case 'v', 'V', 'q', 'Q':
			m.stage = m.back
		}
	}
}

// wholeText is every line of the whole view for a screen width columns
// wide.
func wholeText(v *view, width int) []string {
	text := max(width-wholeIndent, 8)
	pad := strings.Repeat(" ", wholeIndent)
	out := []string{fmt.Sprintf("  the whole %s, %d characters:", v.valueLabel, v.value.runes)}
	value := v.value.line()
	if v.value.empty() {
		value = "(not given)"
	}
	for _, l := range wrapText(value, text, 0, "") {
		out = append(out, pad+l)
	}
	for _, b := range []struct {
		label string
		text  kept
	}{{"message from the subagent", v.message()}, {"evidence from the subagent", v.evidence()}} {
		if !b.text.empty() {
			out = append(out, "  "+b.label+":")
			out = append(out, gutterLines(b.text.block(), width)...)
		}
	}
	return out
}

// wholeLines lays out the whole view in at most rows lines: a window of
// it and, when it does not fit, a note saying where the window is.
func (m *machine) wholeLines(width, rows int) []line {
	all := wholeText(m.cur.view, width)
	height := max(rows-1, 1)
	var out []line
	if len(all) <= height {
		m.whole = pane{page: len(all), total: len(all)}
		for _, l := range all {
			out = append(out, line{text: l})
		}
		return out
	}
	last := len(all) - height
	top := min(max(m.wholeTop, 0), last)
	m.whole = pane{top: top, page: height, last: last, total: len(all)}
	for _, l := range all[top : top+height] {
		out = append(out, line{text: l})
	}
	note := fmt.Sprintf("  lines %d–%d of %d", top+1, top+height, len(all))
	return append(out, line{text: note, sgr: sgrBold})
}

// gutterLines draws lines the child wrote behind the gutter, each wrapped
// in full: every screen line starts with "  │ ", which no line of the
// broker's own starts with, so that no line of the child's can pass for
// one of them.
func gutterLines(lines []string, width int) []string {
	var out []string
	for _, l := range lines {
		if l == "" {
			out = append(out, gutter)
			continue
		}
		for _, w := range wrapText(l, max(width-columns(gutter), 8), 0, "") {
			out = append(out, gutter+w)
		}
	}
	return out
}

// gutter starts every screen line of text the child wrote.
const gutter = "  │ "
