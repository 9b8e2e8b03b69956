package prompt

import (
	"fmt"
	"strings"
	"time"
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
// the count of those waiting, the current choice and a notice; above
// them, when the rows leave room, the last asks that left the screen.
// Every line fits the width. It records what it made of the scrolling
// windows (the units, the scope choice's grants, the whole view, the
// list), which the scroll keys move on from.
func (m *machine) frame(width, rows int, session string, now time.Time) []line {
	out := m.frameBody(width, rows, session, now)
	if room := rows - len(out); room > 0 && len(m.recent) > 0 {
		recent := m.recentLines(width)
		recent = recent[max(len(recent)-room, 0):]
		out = append(recent, out...)
	}
	return out
}

// frameBody is the frame without the recent asks.
func (m *machine) frameBody(width, rows int, session string, now time.Time) []line {
	e := m.head()
	if e == nil {
		status := fmt.Sprintf(" courier · serving session %s · no asks waiting · %s ", session, m.tally)
		out := []line{{text: rule(status, width), sgr: sgrBold}}
		if who := m.tally.breakdown(); who != "" {
			out = append(out, line{text: "  answered " + who})
		}
		if m.notice != "" {
			out = append(out, line{text: "  " + m.notice, sgr: sgrBold})
		}
		return fit(out, width, rows)
	}

	header := line{text: rule2(" Permission Required (Subagent) ", m.count(now), width), sgr: sgrBold}
	footer := keyLines(m.help(now), width)
	var notice []line
	if m.notice != "" {
		notice = []line{{text: "  ! " + m.notice, sgr: sgrBold}}
	}
	if m.stage == stageWhole || m.stage == stageList {
		var body []line
		if m.stage == stageWhole {
			body = m.wholeLines(width, rows-1-len(footer)-len(notice))
		} else {
			body = m.listLines(width, rows-1-len(footer)-len(notice), now)
		}
		out := append([]line{header}, body...)
		out = append(out, footer...)
		return fit(append(out, notice...), width, rows)
	}

	fixed := 1 + 1 + len(footer) + len(notice)
	if m.stage == stageScope {
		// The footer says whether the list of grants has been seen, which
		// the list's layout decides: lay it out for the longer footer.
		fixed += len(keyLines(m.scopeHelp(false), width)) - len(footer)
	}
	var choice []line
	switch m.stage {
	case stageChoose:
		for i, a := range answers {
			choice = append(choice, optionLine(i == m.cursor, a))
		}
	case stageScope:
		// The list of grants keeps room for the essential fields above it.
		const keepFields = 4
		choice = m.scopeLines(e, width, rows-fixed-scopeHead-keepFields-1)
	case stageEdit:
		choice = m.editLines(width)
	case stageReason:
		choice = append(choice,
			line{text: "  No, with a reason: the agent is told why"},
			line{text: "  reason > " + tail(string(m.reason), width-12) + "█"})
	case stageDenyAll:
		choice = m.denyAllLines()
	}

	var seen seenLines
	if m.stage == stageScope {
		seen = m.seenAfter(width)
		footer = keyLines(m.scopeHelp(m.grantPane.total > 0 && seen.to >= m.grantPane.total-1), width)
	}
	// The units pane the operator scrolls is the one this frame shows.
	fields, units := layoutFields(m.fields(e), width, rows-fixed-len(choice), m.scroll)
	m.units = units
	out := append([]line{header}, fields...)
	out = append(out, line{})
	out = append(out, choice...)
	out = append(out, footer...)
	out = append(out, notice...)
	if m.stage == stageScope {
		// The list counts as seen only if fit keeps all of it on a short
		// screen (it drops the lines after the header first).
		if listStart := 1 + len(fields) + 1 + scopeHead; len(out)-rows < listStart {
			m.seen = seen
		}
	}
	return fit(out, width, rows)
}

// keyLines is the footer: the keys, " · " between them, on as many lines
// as the width needs (a key is never cut off the end).
func keyLines(keys []string, width int) []line {
	var out []line
	cur := ""
	for _, k := range keys {
		switch {
		case cur == "":
			cur = "  " + k
		case columns(cur)+3+columns(k) <= width:
			cur += " · " + k
		default:
			out = append(out, line{text: cur})
			cur = "  " + k
		}
	}
	return append(out, line{text: cur})
}

// count says how many asks wait behind the one on screen, and from how
// many requesters, and how long the one on screen has left when a prompt
// timeout is set; "" when there is nothing to say.
func (m *machine) count(now time.Time) string {
	var parts []string
	if n := m.waiting(); n > 0 {
		parts = append(parts, fmt.Sprintf("%d more waiting, from %d %s", n, m.q.sessions, plural(m.q.sessions, "session", "sessions")))
	}
	if left := timeLeft(m.cur, now); left != "" {
		parts = append(parts, left)
	}
	if len(parts) == 0 {
		return ""
	}
	return " " + strings.Join(parts, " · ") + " "
}

// fields are the fields of the ask on screen: the grants the whole
// session would record go before what the child wrote, except in the
// scope choice, which lists them itself.
func (m *machine) fields(e *entry) []field {
	fields := e.view.fields()
	if !e.grantable() || m.stage == stageScope {
		return fields
	}
	out := make([]field, 0, len(fields)+1)
	added := false
	for _, f := range fields {
		if f.gutter && !added {
			out, added = append(out, grantField(m.wholeGrants(e))), true
		}
		out = append(out, f)
	}
	if !added {
		out = append(out, grantField(m.wholeGrants(e)))
	}
	return out
}

// help is the footer: the keys of the current choice, or a hint that keys
// do not count yet.
func (m *machine) help(now time.Time) []string {
	if m.stage == stageWhole {
		return []string{"↑/↓ scroll", "pgdn/pgup a page", "esc, v or q goes back", "this view answers nothing"}
	}
	if m.stage == stageList {
		return []string{"↑/↓ move", "pgdn/pgup a page", "enter shows the ask", "esc, l or q goes back", "this list answers nothing"}
	}
	if !m.armed(now) {
		return []string{"(a new ask: keys count in a moment)"}
	}
	switch m.stage {
	case stageScope:
		return m.scopeHelp(m.grantsSeen())
	case stageReason:
		return []string{"type the reason", "enter sends", "esc goes back", "ctrl-u clears"}
	case stageEdit:
		return []string{"type the pattern", "enter accepts", "esc cancels the edit", "ctrl-u clears"}
	case stageDenyAll:
		return []string{"y denies them all", "n or esc goes back"}
	}
	keys := []string{"↑/↓ move", "enter picks", "or press y s n r", "v shows the whole ask", "D denies all from this session"}
	if n := m.waiting(); n > 0 {
		keys = append(keys, fmt.Sprintf("l lists the %d waiting", n))
	}
	return keys
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
		switch {
		case f.scroll && f.pane:
			// The last layout of the scroll keys' field is the one shown:
			// it is never dropped.
			var texts []string
			texts, pn = layScroll(f, text, wrap, top)
			return labelled(f.label, texts)
		case f.scroll:
			texts, _ := layScroll(f, text, wrap, 0)
			return labelled(f.label, texts)
		case f.gutter:
			return layGutter(f, width, wrap)
		case f.whole != "":
			return labelled(f.label, headTail(f.texts()[0], text, wrap, f.whole))
		}
		var out []line
		for _, l := range f.texts() {
			for j, w := range wrapText(l, text, wrap, "") {
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
				if len(all[i].lines) > limit && all[i].wrap > max(all[i].f.min, 1) && (longest < 0 || len(all[i].lines) > len(all[longest].lines)) {
					longest = i
				}
			}
			if longest < 0 {
				return
			}
			a := &all[longest]
			a.wrap = max(min(a.wrap, len(a.lines))-1, a.f.min, 1)
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

// layGutter lays out text the child wrote: its label on a line of its
// own, then its lines behind the gutter, at most wrap of them; past them,
// a marker line says how many more there are and how to see them.
func layGutter(f field, width, wrap int) []line {
	lines := gutterLines(f.texts(), width)
	if wrap > 0 && len(lines) > wrap {
		more := marker(fmt.Sprintf("%d more lines · v shows the whole ask", len(lines)-(wrap-1)))
		lines = append(lines[:max(wrap-1, 0):max(wrap-1, 0)], gutter+more)
	}
	out := []line{{text: "  " + f.label + ":"}}
	for _, l := range lines {
		out = append(out, line{text: l})
	}
	return out
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
	start, w := len(r), 0
	for start > 0 && w+runeWidth(r[start-1]) <= width-1 {
		start--
		w += runeWidth(r[start])
	}
	return "…" + string(r[start:])
}
