package prompt

import (
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/seed6639df8c/courier/rules"
	"github.com/seed6639df8c/courier/serve"
	"github.com/seed6639df8c/courier/wire"
)

// maxPattern caps a grant pattern typed at the prompt, in characters; at
// four bytes each it stays within rules.MaxGrantLength.
const maxPattern = 1000

// grantEdit is the operator editing, from the scope choice, the patterns
// that "the whole session" records. The grants are edited one after the
// other, each pre-filled with its pattern; enter accepts one and moves to
// the next, and after the last one the scope choice shows the edited
// grants. Esc cancels the whole edit: the grants are as they were when it
// began. Only the pattern is edited, never the surface.
//
// An edited pattern is accepted only if it still matches what its grant
// was suggested for (see suggestedFor): an edit may narrow or reword a
// grant, not aim it at something the operator was not asked about.
type grantEdit struct {
	// at is the index of the grant being edited; text its pattern so far.
	at   int
	text []rune
	// targets are what the grant at was suggested for, as the child sent
	// them (raw: they are matched, and cleaned only to be shown).
	targets []string
	// from and cursor are the edited grants (nil: those admitted) and the
	// scope choice's cursor when the edit began, which Esc restores.
	from   []wire.SuggestedGrant
	cursor int
}

// wholeGrants returns what "the whole session" would record for the ask
// on screen: the operator's edited grants, or those the broker admitted.
func (m *machine) wholeGrants(e *entry) []wire.SuggestedGrant {
	if m.grants != nil {
		return m.grants
	}
	return e.grants
}

// startEdit opens the editor on the first grant.
func (m *machine) startEdit(e *entry) {
	grants := slices.Clone(m.wholeGrants(e))
	m.edit = grantEdit{from: m.grants, cursor: m.cursor}
	m.grants = grants
	m.stage = stageEdit
	m.editGrant(e, 0)
}

// editGrant moves the editor to grant i, pre-filled with its pattern.
func (m *machine) editGrant(e *entry, i int) {
	m.edit.at = i
	m.edit.text = []rune(m.grants[i].Pattern)
	m.edit.targets = e.targets[i]
}

func (m *machine) pressEdit(k key, e *entry) {
	switch k.Code {
	case keyEsc:
		m.grants, m.cursor, m.stage = m.edit.from, m.edit.cursor, stageScope
		m.edit = grantEdit{}
		m.resetGrantPane()
		m.notice = "the edit was cancelled: the whole session would record the grants shown before it"
	case keyBackspace:
		if len(m.edit.text) > 0 {
			m.edit.text = m.edit.text[:len(m.edit.text)-1]
		}
	case keyKillLine:
		m.edit.text = nil
	case keyRune:
		if len(m.edit.text) < maxPattern && typable(k.Rune) {
			m.edit.text = append(m.edit.text, k.Rune)
		}
	case keyEnter:
		pattern := string(m.edit.text)
		if why := m.checkPattern(pattern); why != "" {
			m.notice = why
			return
		}
		m.grants[m.edit.at].Pattern = pattern
		if next := m.edit.at + 1; next < len(m.grants) {
			m.editGrant(e, next)
			return
		}
		if slices.Equal(m.grants, e.grants) {
			m.grants = nil
		}
		// The cursor goes back where it was, never to the whole session
		// by itself: a second press of enter must not widen the answer.
		// What it records is listed anew, to be seen again.
		m.stage, m.cursor = stageScope, m.edit.cursor
		m.edit = grantEdit{}
		m.resetGrantPane()
	}
}

// checkPattern returns why pattern cannot replace the grant being
// edited, or "" when it can. A pattern left as it was (as the broker
// admitted it, or an earlier accepted edit) always can.
func (m *machine) checkPattern(pattern string) string {
	if pattern == m.grants[m.edit.at].Pattern {
		return ""
	}
	switch {
	case strings.TrimSpace(pattern) == "":
		return "a pattern is required (esc cancels the edit)"
	case strings.ContainsFunc(pattern, func(r rune) bool { return !typable(r) }):
		return "the pattern holds characters that cannot be typed (shown escaped): remove them"
	case utf8.RuneCountInString(pattern) > maxPattern || len(pattern) > rules.MaxGrantLength:
		return fmt.Sprintf("the pattern is longer than %d characters", maxPattern)
	case len(m.edit.targets) == 0:
		return "there is nothing to check an edited pattern against: esc keeps the grant as it was"
	}
	p := rules.CompilePattern(pattern, m.home)
	for _, t := range m.edit.targets {
		if p.Match(t) {
			return ""
		}
	}
	return fmt.Sprintf(`"%s" does not match what the grant was suggested for: %s`,
		Clean(pattern, capShort), targetList(m.edit.targets))
}

// suggestedFor returns what grant g of an ask was suggested for, the
// values an edit of it must still match: on bash, the units of the
// command line (the broker's rules match a grant against each unit, never
// the whole line), elsewhere the match values and the value; of those,
// the ones g's own pattern matches, or all of them when it matches none.
// They are copies, and none longer than keepTargetLength: a held ask keeps
// no more of its request than that.
func suggestedFor(ask *serve.Ask, g wire.SuggestedGrant, home string) []string {
	var values []string
	if units := ask.Resolution.Units; g.Surface == "bash" && len(units) > 0 {
		for _, u := range units {
			values = append(values, u.Command)
		}
	} else {
		if intent := ask.Request.AccessIntent; intent != nil {
			values = append(values, intent.MatchValues...)
		}
		if v := ask.Request.Value; v != "" && !slices.Contains(values, v) {
			values = append(values, v)
		}
	}
	values = slices.DeleteFunc(values, func(v string) bool { return len(v) > keepTargetLength })
	p := rules.CompilePattern(g.Pattern, home)
	var matched []string
	for _, v := range values {
		if p.Match(v) {
			matched = append(matched, strings.Clone(v))
		}
	}
	if len(matched) == 0 {
		for _, v := range values {
			matched = append(matched, strings.Clone(v))
		}
	}
	return matched
}

// targetList shows what an edited pattern must match, cleaned and short.
func targetList(targets []string) string {
	if len(targets) == 1 {
		return Clean(targets[0], capLine)
	}
	const shown = 3
	var parts []string
	for i, t := range targets {
		if i == shown {
			parts = append(parts, fmt.Sprintf("%d more", len(targets)-shown))
			break
		}
		parts = append(parts, Clean(t, capShort))
	}
	return "one of " + strings.Join(parts, ", ")
}
