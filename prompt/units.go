package prompt

import (
	"fmt"
	"strings"

	"github.com/seed6639df8c/courier/rules"
)

// The units of a bash ask: the broker's rules judge every simple command
// of a command line on its own (see bashunits), and the operator sees
// each unit with its own answer and what decided it. Nothing the operator
// approves is hidden: the units field is never cut or dropped; when the
// screen cannot hold it, it shows a window of it that the operator
// scrolls (page up, page down), and a last line says which units show.
const (
	// unitWindow is how many screen lines the units take before they
	// scroll.
	unitWindow = 10
	// actionColumn is the width of a unit line's action, "allow  "; a
	// unit line that wraps continues under its command.
	actionColumn = 7
	// alignCommands is the widest command that the deciders are aligned
	// after; a longer one is followed by two spaces.
	alignCommands = 40
	// keepUnitHead and keepUnitTail bound what is kept of one unit's
	// command: units come from a line of at most bashunits.MaxLen bytes,
	// or from the child's asking units.
	keepUnitHead = 6 << 10
	keepUnitTail = 2 << 10
)

// showUnits reports whether an ask's units get a field of their own: a
// command line of several units, or one that a floor holds. One plain
// unit is the command itself, and the why field names its rule.
func showUnits(units []rules.UnitResolution) bool {
	if len(units) > 1 {
		return true
	}
	for _, u := range units {
		if u.Floor != "" {
			return true
		}
	}
	return false
}

// unitRows are an ask's units as its view keeps them: a row per unit, in
// source order, and the tally of their answers.
type unitRows struct {
	rows  []unitRow
	tally string
}

// unitRow is one unit: its action, its command (kept like the value,
// cleaned when drawn) and what decided it.
type unitRow struct {
	action, decider string
	command         kept
}

// keepUnits keeps what the units field shows of units.
func keepUnits(units []rules.UnitResolution) *unitRows {
	rows := make([]unitRow, len(units))
	count := map[rules.Action]int{}
	for i, u := range units {
		count[u.Action]++
		rows[i] = unitRow{
			action: Clean(string(u.Action), capShort), decider: decider(u),
			command: keep(u.Command, keepUnitHead, keepUnitTail),
		}
	}
	var counts []string
	for _, a := range []rules.Action{rules.Allow, rules.Ask, rules.Deny} {
		if count[a] > 0 {
			counts = append(counts, fmt.Sprintf("%d %s", count[a], a))
		}
	}
	return &unitRows{rows: rows, tally: strings.Join(counts, ", ")}
}

// field is the units field: every unit, in source order, one line each.
func (u *unitRows) field() field {
	rows := u.rows
	lazy := func() []string {
		commands := make([]string, len(rows))
		align := 0
		for i, r := range rows {
			commands[i] = r.command.line()
			if commands[i] == "" {
				commands[i] = "(empty)"
			}
			if c := columns(commands[i]); c <= alignCommands {
				align = max(align, c)
			}
		}
		lines := make([]string, len(rows))
		for i, r := range rows {
			pad := strings.Repeat(" ", max(align-columns(commands[i]), 0))
			lines[i] = fmt.Sprintf("%-*s%s%s  %s", actionColumn, r.action, commands[i], pad, r.decider)
		}
		return lines
	}
	return field{
		label: "units", lazy: lazy, wrap: unitWindow, rank: rankEssential,
		scroll: true, hang: actionColumn, tally: u.tally,
		more: "pgdn/pgup scroll", pane: true,
	}
}

// decider says what decided a unit: the rule (or session grant, or the
// default) and, when a floor applied, the floor and what raised it.
func decider(u rules.UnitResolution) string {
	rule := unitRule(u.Rule)
	if u.Origin == rules.OriginYolo && u.Rule.Origin != rules.OriginYolo {
		rule = "yolo mode over " + rule
	}
	if u.Floor == "" {
		return rule
	}
	floor := "floor " + Clean(u.Floor, capShort)
	if u.Why != "" {
		floor += ": " + Clean(u.Why, capLine)
	} else {
		floor += " (the child's)"
	}
	return floor + "; " + rule + " says " + Clean(string(u.Rule.Action), capShort)
}

// unitRule names the rule that answered a unit: its layer, its surface
// when that is not bash, its pattern and where it was written.
func unitRule(r rules.Rule) string {
	var s string
	switch r.Origin {
	case "":
		return "no rule"
	case rules.OriginDefault:
		s = "no rule matched, the default"
	case rules.OriginSession:
		return `session grant "` + Clean(r.Pattern, capLine) + `"`
	default:
		s = Clean(string(r.Origin), capShort) + " rule"
		if r.Surface != "bash" {
			s += " " + Clean(r.Surface, capShort)
		}
		if !r.SurfaceWide {
			s += ` "` + Clean(r.Pattern, capLine) + `"`
		}
	}
	if r.At != "" {
		s += " (" + Clean(r.At, capShort) + ")"
	}
	return s
}

// pane is what a frame made of a scrolling field: the line it starts
// at, how many it shows at once, the furthest it can start, and how many
// lines the field has in all.
type pane struct {
	top, page, last, total int
}

// layScroll lays out a scrolling field for a text column width wide:
// every line wrapped in full, continuing under its hang; then a window of
// height screen lines from top (moved back in range if it is past the
// end), and when the window does not show every line, a last line that
// says which of the field's entries it shows and how to see the rest.
func layScroll(f field, width, height, top int) ([]string, pane) {
	var all []string
	var entry []int // entry[i] is the index of the line screen line i belongs to
	texts := f.texts()
	for i, l := range texts {
		for _, w := range wrapHanging(l, width, f.hang) {
			all = append(all, w)
			entry = append(entry, i)
		}
	}
	height = max(height, 1)
	if len(all) <= height {
		return all, pane{page: len(all), total: len(all)}
	}
	last := len(all) - height
	top = min(max(top, 0), last)
	out := append([]string(nil), all[top:top+height]...)
	more := "↕"
	switch top {
	case 0:
		more = "↓"
	case last:
		more = "↑"
	}
	note := fmt.Sprintf("%s %s %d–%d of %d shown", more, f.label, entry[top]+1, entry[top+height-1]+1, len(texts))
	if f.tally != "" {
		note += " (" + f.tally + ")"
	}
	if f.more != "" {
		note += " · " + f.more
	}
	out = append(out, cut(note, width))
	return out, pane{top: top, page: height, last: last, total: len(all)}
}

// wrapHanging wraps an already clean string to width columns, its
// continuation lines indented by hang.
func wrapHanging(s string, width, hang int) []string {
	lines := wrapText(s, width, 0, "")
	if len(lines) <= 1 || hang <= 0 || width-hang < 8 {
		return lines
	}
	out := lines[:1:1]
	for _, l := range wrapText(s[len(lines[0]):], width-hang, 0, "") {
		out = append(out, strings.Repeat(" ", hang)+l)
	}
	return out
}
