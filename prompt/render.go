package prompt

import (
	"fmt"
	"strings"
	"time"

	"github.com/seed6639df8c/courier/wire"
)

// Text attributes. Only the prompt's own frame uses them; untrusted text
// has been through Clean and carries none.
const (
	sgrReset   = "\x1b[0m"
	sgrBold    = "\x1b[1m"
	sgrReverse = "\x1b[7m"
)

// line is one screen line of the frame: clean text and its attribute.
type line struct {
	text string
	sgr  string
}

// labelWidth is the width of the label column of an ask's fields.
const labelWidth = 11

// frame lays out the prompt for a screen width columns wide with at most
// rows lines: the idle line when nothing waits, else the ask on screen,
// the count of those waiting, the current choice and a notice. Every line
// fits the width. It records what it made of the units field (m.units),
// which the scroll keys move on from.
func (m *machine) frame(width, rows int, session string, now time.Time) []line {
	e := m.head()
	if e == nil {
		status := fmt.Sprintf(" courier · serving session %s · no asks waiting · %d answered ", session, m.answered)
		out := []line{{text: rule(status, width), sgr: sgrBold}}
		if m.notice != "" {
			out = append(out, line{text: "  " + m.notice, sgr: sgrBold})
		}
		return fit(out, width, rows)
	}

	title := " Permission Required (Subagent) "
	count := ""
	if n := m.waiting(); n > 0 {
		count = fmt.Sprintf(" %d more waiting ", n)
	}
	header := line{text: rule2(title, count, width), sgr: sgrBold}

	var choice []line
	switch m.stage {
	case stageChoose:
		for i, a := range answers {
			choice = append(choice, optionLine(i == m.cursor, a))
		}
	case stageScope:
		if m.grants == nil {
			choice = append(choice, line{text: "  Apply this session grant (above) to:"})
		} else {
			choice = append(choice, line{text: "  Apply a session grant to:"})
		}
		for i, a := range scopeLabels(e.view.agent) {
			choice = append(choice, optionLine(i == m.cursor, a))
		}
		if m.grants != nil {
			choice = append(choice, editedLines(m.grants, e.suggested(), width)...)
		}
	case stageEdit:
		choice = m.editLines(width)
	case stageReason:
		choice = append(choice,
			line{text: "  No, with a reason: the agent is told why"},
			line{text: "  reason > " + tail(string(m.reason), width-12) + "█"})
	}
	footer := line{text: "  " + m.help(now)}
	var notice []line
	if m.notice != "" {
		notice = []line{{text: "  ! " + m.notice, sgr: sgrBold}}
	}

	fixed := 1 + 1 + len(choice) + 1 + len(notice)
	// The units pane the operator scrolls is the one this frame shows.
	fields, units := layoutFields(e.view.fields, width, rows-fixed, m.scroll)
	m.units = units
	out := append([]line{header}, fields...)
	out = append(out, line{})
	out = append(out, choice...)
	out = append(out, footer)
	out = append(out, notice...)
	return fit(out, width, rows)
}

// help is the footer: the keys of the current choice, or a hint that keys
// do not count yet.
func (m *machine) help(now time.Time) string {
	if !m.armed(now) {
		return "(a new ask: keys count in a moment)"
	}
	switch m.stage {
	case stageScope:
		return "↑/↓ move · enter picks · 1 or 2 · e edits the whole-session grant · esc = this subagent only"
	case stageReason:
		return "type the reason · enter sends · esc goes back · ctrl-u clears"
	case stageEdit:
		return "type the pattern · enter accepts · esc cancels the edit · ctrl-u clears"
	}
	return "↑/↓ move · enter picks · or press y s n r"
}

// editedLines lists, under the whole session, the grants it records once
// the operator edited them, marking those that differ from the child's
// suggestion (which the subagent's answer records).
func editedLines(grants, suggested []wire.SuggestedGrant, width int) []line {
	var out []line
	for i, g := range grants {
		text := "records " + Clean(g.Surface, capShort) + ": " + Clean(g.Pattern, 0)
		if i < len(suggested) && g != suggested[i] {
			text += "  (edited)"
		}
		for _, w := range wrapHanging(text, width-8, 8) {
			out = append(out, line{text: "        " + w})
		}
	}
	return out
}

// editLines is the grant editor: which grant, its pattern being typed, and
// what it must still match.
func (m *machine) editLines(width int) []line {
	g := m.grants[m.edit.at]
	head := fmt.Sprintf("  Edit the whole-session grant on %s", Clean(g.Surface, capShort))
	if n := len(m.grants); n > 1 {
		head += fmt.Sprintf(" (%d of %d)", m.edit.at+1, n)
	}
	return []line{
		{text: head + " · this subagent only keeps the suggestion"},
		{text: "  pattern > " + tail(Clean(string(m.edit.text), 0), width-13) + "█"},
		{text: "  it must match " + targetList(m.edit.targets)},
	}
}

func optionLine(selected bool, o option) line {
	if selected {
		return line{text: fmt.Sprintf("  ▸ [%c] %s ", o.key, o.label), sgr: sgrReverse}
	}
	return line{text: fmt.Sprintf("    [%c] %s", o.key, o.label)}
}

// layoutFields wraps the fields to the width and drops the least important
// ones until they fit in rows lines. A scrolling field (the units) is
// never dropped: it shrinks to a window that starts at its line top, and
// the pane says what the window became.
func layoutFields(fields []field, width, rows, top int) ([]line, pane) {
	text := width - labelWidth - 2
	type laid struct {
		f     field
		wrap  int
		lines []line
	}
	var pn pane
	labelled := func(label string, texts []string) []line {
		out := make([]line, len(texts))
		for i, w := range texts {
			if i > 0 {
				label = ""
			}
			out[i] = line{text: fmt.Sprintf("  %-*s%s", labelWidth, label, w)}
		}
		return out
	}
	lay := func(f field, wrap int) []line {
		if f.scroll {
			// The last layout of the one scrolling field is the one shown:
			// it is never dropped.
			var texts []string
			texts, pn = layScroll(f, text, wrap, top)
			return labelled(f.label, texts)
		}
		var out []line
		for _, l := range f.lines {
			for j, w := range wrapText(l, text, wrap, f.note) {
				label := ""
				if len(out) == 0 && j == 0 {
					label = f.label
				}
				out = append(out, line{text: fmt.Sprintf("  %-*s%s", labelWidth, label, w)})
			}
		}
		return out
	}
	all := make([]laid, len(fields))
	total := 0
	for i, f := range fields {
		all[i] = laid{f: f, wrap: f.wrap, lines: lay(f, f.wrap)}
		total += len(all[i].lines)
	}
	// drop removes the fields of one rank, later ones first.
	drop := func(rank int) {
		for i := len(all) - 1; i >= 0 && total > rows; i-- {
			if all[i].f.rank == rank && all[i].lines != nil {
				total -= len(all[i].lines)
				all[i].lines = nil
			}
		}
	}
	// shrink wraps the longest field into fewer lines, down to limit.
	shrink := func(limit int) {
		for total > rows {
			longest := -1
			for i := range all {
				if len(all[i].lines) > limit && all[i].wrap > 1 && (longest < 0 || len(all[i].lines) > len(all[longest].lines)) {
					longest = i
				}
			}
			if longest < 0 {
				return
			}
			a := &all[longest]
			a.wrap = max(min(a.wrap, len(a.lines))-1, 1)
			total -= len(a.lines)
			a.lines = lay(a.f, a.wrap)
			total += len(a.lines)
		}
	}
	// Context goes first, then the message; the value keeps three lines
	// before the reasons for the ask go; the ask itself goes last.
	drop(rankContext)
	drop(rankMessage)
	shrink(3)
	drop(rankWhy)
	shrink(1)
	var out []line
	for _, a := range all {
		out = append(out, a.lines...)
	}
	return out, pn
}

// fit cuts every line to the width and the frame to the rows, keeping the
// end (the choice and the keys) when it must drop lines.
func fit(lines []line, width, rows int) []line {
	if rows > 0 && len(lines) > rows {
		lines = append(lines[:1:1], lines[len(lines)-rows+1:]...)
	}
	for i := range lines {
		lines[i].text = cut(lines[i].text, width)
	}
	return lines
}

// rule is a horizontal rule with text near its start.
func rule(text string, width int) string {
	return rule2(text, "", width)
}

// rule2 is a horizontal rule with left text near its start and right text
// near its end. When the width is short, the left text is cut first: the
// count of asks waiting matters more than the title.
func rule2(left, right string, width int) string {
	left = cut(left, width-4-1-columns(right))
	fill := width - 2 - columns(left) - columns(right) - 2
	if fill < 1 {
		fill = 1
	}
	return "──" + left + strings.Repeat("─", fill) + right + "──"
}

// tail keeps the end of s within width columns: the end of a typed reason
// is where the operator is typing.
func tail(s string, width int) string {
	if width < 4 || columns(s) <= width {
		return s
	}
	r := []rune(s)
	for len(r) > 0 && columns(string(r)) > width-1 {
		r = r[1:]
	}
	return "…" + string(r)
}
