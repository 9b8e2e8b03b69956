package prompt

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/seed6639df8c/courier/rules"
	"github.com/seed6639df8c/courier/serve"
	"github.com/seed6639df8c/courier/wire"
)

// Caps on what one ask may put on the screen. The value is the thing the
// operator decides on, so it gets the most room; the rest is context.
const (
	capShort       = 80   // agent names, session ids, surfaces
	capValue       = 8192 // the command or path, before wrapping
	capLine        = 400  // one line of message, evidence, cwd, a pattern
	valueLines     = 8
	messageLines   = 4
	maxEvidence    = 6
	maxGrants      = 4
	maxAskingUnits = 4
	maxMatchValues = 3
)

// field is one labelled part of an ask's description: clean text lines,
// wrapped to the screen's width when drawn.
type field struct {
	label string
	lines []string
	// wrap is how many screen lines each line may take.
	wrap int
	// note replaces the last allowed screen line of a line that needs
	// more (see wrapText).
	note string
	// rank orders what goes first when the screen is short: higher stays.
	rank int
	// scroll marks a field that is never cut (the units): each line is
	// wrapped in full, continuing under its hang, and wrap is the height
	// of the window that shows them; what does not fit is scrolled to,
	// and a note line says so (see layScroll). tally sums the lines up
	// for that note.
	scroll bool
	hang   int
	tally  string
}

// view is an ask as the operator sees it, made safe once when the ask
// arrives: every string in it went through Clean.
type view struct {
	// agent is the requesting agent's name, for the scope choice's label.
	agent  string
	fields []field
	// grants are the patterns a session grant would record, "surface:
	// pattern", for the scope choice.
	grants []string
	// summary is one line naming the ask, for notices about it.
	summary string
}

// Field ranks: what survives a short screen.
const (
	rankContext = iota
	rankMessage
	rankWhy
	rankEssential
)

// describe makes the view of an ask, once, when it arrives: every string
// the child sent is cleaned here and nowhere later.
func describe(ask serve.Ask) view {
	req := ask.Request
	intent := req.AccessIntent
	v := view{agent: Clean(req.RequesterAgentName, capShort)}

	from := fmt.Sprintf("'%s' · session %s", v.agent, Clean(req.RequesterSessionID, capShort))
	if intent != nil && intent.Principal.AgentName != "" && intent.Principal.AgentName != req.RequesterAgentName {
		from += fmt.Sprintf(" (rules apply to agent '%s')", Clean(intent.Principal.AgentName, capShort))
	}
	v.add(field{label: "from", lines: []string{from}, wrap: 2, rank: rankEssential})

	surface := req.Surface
	if intent != nil && surface == "" {
		surface = intent.Surface
	}
	surfaceLine := Clean(surface, capShort)
	if surfaceLine == "" {
		surfaceLine = "(not given)"
	}
	if intent != nil && intent.Surface != surface {
		surfaceLine += fmt.Sprintf(" (gate surface %s)", Clean(intent.Surface, capShort))
	}
	v.add(field{label: "surface", lines: []string{surfaceLine}, wrap: 1, rank: rankEssential})

	value := req.Value
	if value == "" && intent != nil && len(intent.MatchValues) > 0 {
		value = intent.MatchValues[0]
	}
	cleanValue := Clean(value, capValue)
	if cleanValue == "" {
		cleanValue = "(not given)"
	}
	v.add(field{
		label: valueLabel(surface, intent), lines: []string{cleanValue}, wrap: valueLines, rank: rankEssential,
		note: fmt.Sprintf("… cut: %d characters in all, the rest is not shown", utf8.RuneCountInString(value)),
	})
	v.summary = fmt.Sprintf("'%s' %s", v.agent, cut(Clean(value, capShort), 40))
	if units := ask.Resolution.Units; showUnits(units) {
		v.add(unitsField(units))
	}

	if intent != nil {
		var also []string
		seen := map[string]bool{value: true}
		for _, m := range intent.MatchValues {
			if !seen[m] && len(also) < maxMatchValues {
				also = append(also, Clean(m, capLine))
			}
			seen[m] = true
		}
		if b := intent.BoundaryValue; b != nil && !seen[*b] && len(also) < maxMatchValues {
			also = append(also, Clean(*b, capLine)+" (boundary)")
		}
		if len(also) > 0 {
			v.add(field{label: "matched as", lines: also, wrap: 1, rank: rankWhy})
		}
		if intent.RequesterCwd != "" {
			v.add(field{label: "cwd", lines: []string{Clean(intent.RequesterCwd, capLine)}, wrap: 1, rank: rankContext})
		}
	}

	v.add(field{label: "why", lines: why(ask), wrap: 2, rank: rankWhy})

	if req.Message != "" {
		v.add(field{label: "message", lines: cleanLines(req.Message, capLine, messageLines), wrap: 2, rank: rankMessage})
	}
	if ev := evidence(req.Payload); len(ev) > 0 {
		v.add(field{label: "evidence", lines: ev, wrap: 1, rank: rankContext})
	}
	if sa := req.SessionApproval; sa != nil {
		for i, g := range sa.Grants {
			if i == maxGrants {
				v.grants = append(v.grants, fmt.Sprintf("… and %d more (s, then e, shows each)", len(sa.Grants)-i))
				break
			}
			v.grants = append(v.grants, Clean(g.Surface, capShort)+": "+Clean(g.Pattern, capLine))
		}
		if len(v.grants) > 0 {
			v.add(field{label: "grant", lines: v.grants, wrap: 1, rank: rankEssential})
		}
	}
	return v
}

func (v *view) add(f field) { v.fields = append(v.fields, f) }

// valueLabel names the value the way the operator thinks of it.
func valueLabel(surface string, intent *wire.AccessIntent) string {
	gate := surface
	if intent != nil {
		gate = intent.Surface
	}
	switch {
	case gate == "bash" || surface == "bash":
		return "command"
	case strings.HasPrefix(gate, "path") || strings.HasPrefix(gate, "external_directory"):
		return "path"
	}
	return "value"
}

// why says what made the rules ask: the rule that asked, a floor (the
// child's, or one the broker found in a unit), the bash units that asked
// when the units field does not show them, or that the child sent no
// access facts.
func why(ask serve.Ask) []string {
	intent := ask.Request.AccessIntent
	if intent == nil {
		return []string{"no access facts: an older child (rules not consulted, the ask floor)"}
	}
	res := ask.Resolution
	var lines []string
	switch {
	case res.Floor != "":
		who := "the child asks"
		if !childFloor(intent, res.Floor) {
			who = "a unit asks"
		}
		lines = append(lines, fmt.Sprintf("floor %s: %s even where a rule allows (%s)",
			Clean(res.Floor, capShort), who, ruleText(res.Rule)))
	case res.Rule.Origin == rules.OriginDefault || res.Rule.Origin == "":
		lines = append(lines, "no rule matched: the default is ask")
	default:
		lines = append(lines, ruleText(res.Rule)+" says ask")
	}
	if intent.Floor != "" && res.Floor == "" {
		lines = append(lines, "child floor "+Clean(intent.Floor, capShort))
	}
	if showUnits(res.Units) {
		// The units field shows every unit the child's asking units hold.
		return lines
	}
	for i, u := range intent.AskingUnits {
		if i == maxAskingUnits {
			lines = append(lines, fmt.Sprintf("… and %d more asking units", len(intent.AskingUnits)-i))
			break
		}
		line := "asking unit: " + Clean(u.Command, capLine)
		if u.Floor != "" {
			line += " (floor " + Clean(u.Floor, capShort) + ")"
		}
		lines = append(lines, line)
	}
	return lines
}

// childFloor reports whether floor is one the child set, on the ask or on
// one of its asking units.
func childFloor(intent *wire.AccessIntent, floor string) bool {
	if intent.Floor == floor {
		return true
	}
	for _, u := range intent.AskingUnits {
		if u.Floor == floor {
			return true
		}
	}
	return false
}

// ruleText names a rule: its surface and pattern, where it came from.
func ruleText(r rules.Rule) string {
	if r.Origin == "" {
		return "no rule"
	}
	s := "rule " + Clean(r.Surface, capShort)
	if !r.SurfaceWide {
		s += ` "` + Clean(r.Pattern, capShort) + `"`
	}
	where := string(r.Origin)
	if r.At != "" {
		where += ", " + Clean(r.At, capShort)
	}
	return s + " (" + where + ")"
}

// evidence reads the evidence entries of a child's prompt payload,
// tolerantly: the payload is opaque, untrusted JSON, so anything not
// shaped like {label, text, detail} strings is skipped.
func evidence(payload json.RawMessage) []string {
	if len(payload) == 0 {
		return nil
	}
	var p struct {
		Evidence []json.RawMessage `json:"evidence"`
	}
	if json.Unmarshal(payload, &p) != nil {
		return nil
	}
	var out []string
	for _, raw := range p.Evidence {
		var e map[string]json.RawMessage
		if json.Unmarshal(raw, &e) != nil {
			continue
		}
		var parts []string
		for _, key := range []string{"label", "text", "detail"} {
			var s string
			if json.Unmarshal(e[key], &s) == nil && strings.TrimSpace(s) != "" {
				parts = append(parts, s)
			}
		}
		if len(parts) == 0 {
			continue
		}
		if len(out) == maxEvidence {
			out = append(out, fmt.Sprintf("… and %d more", len(p.Evidence)-maxEvidence))
			break
		}
		line := parts[0]
		if len(parts) > 1 {
			line += ": " + strings.Join(parts[1:], " — ")
		}
		out = append(out, Clean(line, capLine))
	}
	return out
}
