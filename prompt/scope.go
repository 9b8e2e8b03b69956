package prompt

import "fmt"

// The scope choice lists, under "the whole session", every grant it would
// record, each in full: the grants the broker admitted (serve.Ask.Grants)
// or the operator's edit of them. When they need more lines than the
// screen gives them, they show in a window that page down and page up
// scroll, and the whole session can be chosen only once every line of the
// list has been on screen: nothing is recorded that the operator was not
// shown. A screen of another width wraps the list anew, and it must be
// paged through again.
const (
	// grantWindow is how many screen lines the list takes before it
	// scrolls.
	grantWindow = 8
	// grantIndent is where a grant's text starts under the options.
	grantIndent = 8
)

// seenLines is how much of the list of grants has been on screen: every
// line from the first to the line to, at the width it was drawn at.
type seenLines struct {
	width, to int
}

// resetGrantPane starts the list of grants again from its top, unseen.
func (m *machine) resetGrantPane() {
	m.grantTop, m.grantPane = 0, pane{}
	m.seen = seenLines{to: -1}
}

// grantsSeen reports whether every line of the list of grants has been on
// screen, as the last frame laid it out.
func (m *machine) grantsSeen() bool {
	return m.grantPane.total > 0 && m.seen.to >= m.grantPane.total-1
}

// seenAfter is how much of the list of grants has been on screen once a
// frame of the given width shows it as the last layout did (grantPane).
func (m *machine) seenAfter(width int) seenLines {
	p, seen := m.grantPane, m.seen
	if seen.width != width {
		seen = seenLines{width: width, to: -1}
	}
	shown := min(p.page, p.total-p.top)
	if p.top <= seen.to+1 {
		seen.to = max(seen.to, p.top+shown-1)
	}
	return seen
}

// scopeHead is how many lines of the scope choice come before its list
// of grants: the title and the two options.
const scopeHead = 3

// scopeLines is the scope choice: the two options and, under the whole
// session, the list of what it records, in a window of at most height
// lines (and its note). It lays the list out for the scroll keys; the
// frame records what of it was shown (seenAfter).
func (m *machine) scopeLines(e *entry, width, height int) []line {
	out := []line{{text: "  Apply a session grant to:"}}
	for i, a := range scopeLabels(e.view.agent) {
		out = append(out, optionLine(i == m.cursor, a))
	}
	grants := m.wholeGrants(e)
	texts := make([]string, len(grants))
	for i, g := range grants {
		texts[i] = "records " + grantText(g)
		if m.grants != nil && i < len(e.grants) && g != e.grants[i] {
			texts[i] += "  (edited)"
		}
	}
	list := field{label: "grants", lines: texts, hang: len("records "), more: "pgdn/pgup scroll"}
	if len(grants) == 1 {
		list.label = "grant"
	}
	shown, p := layScroll(list, width-grantIndent, max(min(height, grantWindow), 1), m.grantTop)
	m.grantPane = p
	for _, s := range shown {
		out = append(out, line{text: fmt.Sprintf("%*s%s", grantIndent, "", s)})
	}
	return out
}

// scopeHelp is the footer of the scope choice, before or after the list
// of grants has been seen.
func (m *machine) scopeHelp(seen bool) []string {
	help := []string{"↑/↓ move", "enter picks", "1 or 2", "e edits the whole-session grant", "esc = this subagent only", "v shows the whole ask"}
	if !seen {
		help = append([]string{"pgdn shows the rest of the grants before 2"}, help...)
	}
	return help
}
