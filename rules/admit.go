package rules

import (
	"fmt"
	"slices"
	"strings"

	"github.com/seed6639df8c/courier/bashunits"
	"github.com/seed6639df8c/courier/wire"
)

// Grant admission: what "yes, for the whole session" may record. A child
// suggests grants with its request, and a hostile one suggests whatever
// it likes (`bash *` below the prompt's fold). The broker records only
// what passes here, and a prompt shows only what passed, in full.

// DroppedGrant is a grant admission refused, and why.
type DroppedGrant struct {
	Grant wire.SuggestedGrant
	// Why says what the grant failed, for the review log.
	Why string
}

// MaxAdmissionGrants is how many grants of one ask admission considers;
// the rest are dropped together. A prompt cannot show thousands, and each
// one costs a match against every asked value.
const MaxAdmissionGrants = 64

// MaxAdmittedPattern bounds an admitted grant's pattern, in bytes: 64
// grants of a few kilobytes each, answered "whole session" a few times,
// made a journal larger than the broker reads back.
const MaxAdmittedPattern = 512

// AdmitGrants admits the grants a child suggested for the ask q. A grant
// is admitted only if:
//
//   - it names the ask's surface (or, for a bare family ask, one of its
//     members), since a grant on another surface approves what nobody
//     asked;
//   - it covers a value that was asked: its pattern, compiled as the
//     session rules compile it, matches a unit of the (re-split) command
//     line on bash, on a path surface the boundary value when there is
//     one (else a cleaned match value), a match value elsewhere. A floored unit admits no grant: a
//     grant could not allow it, and would allow what it does not show;
//   - it is no wider than that value's own grant: equal to what
//     SuggestGrant gives for the value on the grant's surface, or the
//     value itself, without a wildcard;
//   - it is not a repeat of one admitted before it.
//
// A grant family width chosen at the prompt applies after admission, when
// the grant is recorded. dropped says, for every other grant, why.
func (p *Policy) AdmitGrants(q Query, suggested []wire.SuggestedGrant) (admitted []wire.SuggestedGrant, dropped []DroppedGrant) {
	return admit(p.sessions.home, q, suggested, true)
}

// AdmitGrants is Policy.AdmitGrants without a policy, whose rules
// admission never reads: home expands `~` in patterns as a policy's
// session rules do. The hook adapter checks an agent's suggestions with
// it before they are sent; building a policy for that cost a fresh
// process some 35 µs.
func AdmitGrants(home string, q Query, suggested []wire.SuggestedGrant) (admitted []wire.SuggestedGrant, dropped []DroppedGrant) {
	return admit(home, q, suggested, true)
}

// AdmitOperatorGrants admits the grants an operator typed at the prompt
// for the ask q: each must name the ask's surface and cover a value that
// was asked, as in AdmitGrants, but may be as wide as the operator chose,
// since the operator wrote it and saw it.
func (p *Policy) AdmitOperatorGrants(q Query, chosen []wire.SuggestedGrant) (admitted []wire.SuggestedGrant, dropped []DroppedGrant) {
	return admit(p.sessions.home, q, chosen, false)
}

// askedValue is one value of an ask a grant may cover: a unit in its
// spellings, or a path alias, or a tool's value.
type askedValue struct {
	spellings []string
	// command is the unit as written, from which the bash suggestion is
	// built; empty off bash.
	command string
}

func admit(home string, q Query, grants []wire.SuggestedGrant, narrow bool) (admitted []wire.SuggestedGrant, dropped []DroppedGrant) {
	values, noValues := askedValues(q)
	for i, g := range grants {
		if i == MaxAdmissionGrants {
			dropped = append(dropped, DroppedGrant{Grant: g, Why: fmt.Sprintf("one of %d grants past the first %d, which are all one ask may offer", len(grants)-i, MaxAdmissionGrants)})
			break
		}
		why := admission(home, q, g, values, noValues, narrow)
		if why == "" && slices.Contains(admitted, g) {
			why = "a duplicate"
		}
		if why != "" {
			dropped = append(dropped, DroppedGrant{Grant: g, Why: why})
			continue
		}
		admitted = append(admitted, g)
	}
	return admitted, dropped
}

// admission says why g is not admitted, or "".
func admission(home string, q Query, g wire.SuggestedGrant, values []askedValue, noValues string, narrow bool) string {
	if err := validateGrant(SessionGrant{Surface: g.Surface, Pattern: g.Pattern}); err != nil {
		return err.Error()
	}
	if len(g.Pattern) > MaxAdmittedPattern {
		return fmt.Sprintf("its pattern is %d bytes, over the %d an admitted grant may have", len(g.Pattern), MaxAdmittedPattern)
	}
	if q.Surface == "" {
		return noValues
	}
	if g.Surface != q.Surface && !slices.Contains(familyMembers(q.Surface), g.Surface) {
		return fmt.Sprintf("it names the surface %q; the ask is on %q", g.Surface, q.Surface)
	}
	if len(values) == 0 {
		return noValues
	}
	pattern := CompilePattern(g.Pattern, home)
	covered := false
	for _, v := range values {
		if !slices.ContainsFunc(v.spellings, pattern.Match) {
			continue
		}
		covered = true
		if !narrow || !strings.ContainsAny(g.Pattern, "*?") {
			return ""
		}
		for _, s := range v.spellings {
			if suggestion(g.Surface, v, s) == g.Pattern {
				return ""
			}
		}
	}
	if !covered {
		return "it covers no value that was asked"
	}
	return "it is wider than the broker's own suggestion for every value it covers"
}

// suggestion is SuggestGrant's pattern for one spelling of v; on bash it
// is built from the unit as written, as the child's is.
func suggestion(surface string, v askedValue, spelling string) string {
	if v.command != "" {
		spelling = v.command
	}
	return SuggestGrant(surface, spelling).Pattern
}

// askedValues lists what q asked, as the rules would match it, and, when
// nothing was, says why.
func askedValues(q Query) (values []askedValue, none string) {
	switch {
	case q.Surface == "":
		return nil, "the ask carries no access facts"
	case len(q.AskingUnits) > 0 || q.Surface == "bash":
		var lines []string
		if len(q.AskingUnits) > 0 {
			for _, u := range q.AskingUnits {
				lines = append(lines, u.Command)
			}
		} else {
			lines = q.MatchValues
		}
		floored := false
		for _, l := range lines {
			for _, u := range bashunits.Split(l) {
				if u.Floor != "" {
					floored = true
					continue
				}
				v := askedValue{spellings: []string{u.Command}, command: u.Command}
				if u.Literal != "" {
					v.spellings = append(v.spellings, u.Literal)
				}
				values = append(values, v)
			}
		}
		if len(values) == 0 && floored {
			return nil, "every unit that was asked is floored: no grant can allow it"
		}
	case isPathSurface(q.Surface):
		q = cleanPathQuery(q)
		if q.BoundaryValue != nil {
			// The boundary is the path itself; an alias is only a way to
			// it. A grant that covers an alias alone (a fifth "matched as"
			// value, `/etc/cron.d/x`) would allow what was never asked.
			values = append(values, askedValue{spellings: []string{*q.BoundaryValue}})
			break
		}
		for _, v := range q.MatchValues {
			values = append(values, askedValue{spellings: []string{v}})
		}
	default:
		for _, v := range q.MatchValues {
			values = append(values, askedValue{spellings: []string{v}})
		}
	}
	if len(values) == 0 {
		return nil, "the ask carries no value a grant could cover"
	}
	return values, ""
}
