package prompt

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/seed6639df8c/courier/decision"
	"github.com/seed6639df8c/courier/internal/strictjson"
	"github.com/seed6639df8c/courier/rules"
	"github.com/seed6639df8c/courier/serve"
	"github.com/seed6639df8c/courier/wire"
)

// Caps on what one ask may put on the screen. The value is the thing the
// operator decides on, so it gets the most room; the rest is context.
const (
	capShort       = 80  // agent names, session ids, surfaces
	capLine        = 400 // one line of why, cwd, a match value
	valueLines     = 8
	messageLines   = 4
	evidenceLines  = 4
	grantLines     = 6
	maxAskingUnits = 4
	maxMatchValues = 3
	// maxKey is the longest requester id kept as it is; a longer one is
	// kept as its digest.
	maxKey = 256
)

// field is one labelled part of an ask's description: clean text lines,
// wrapped to the screen's width when drawn.
type field struct {
	label string
	lines []string
	// lazy, when set, makes the lines when the field is laid out: long
	// texts are kept raw and cleaned only for the ask on screen.
	lazy func() []string
	// wrap is how many screen lines each line may take; min is the
	// fewest that shrinking a short screen leaves (0: 1).
	wrap, min int
	// whole, when set, marks the field's one line as a long value: one
	// that needs more than wrap lines shows its head and its tail and a
	// marker line between that says how to see whole (see headTail).
	whole string
	// gutter marks text the child wrote: its label is a line of its own
	// and every line of the text is drawn behind the gutter (see
	// layGutter), so that no line of it can pass for the broker's.
	gutter bool
	// rank orders what goes first when the screen is short: higher stays.
	rank int
	// scroll marks a field that is never cut (the units): each line is
	// wrapped in full, continuing under its hang, and wrap is the height
	// of the window that shows them; what does not fit is scrolled to,
	// and a note line says so (see layScroll). tally sums the lines up
	// for that note; more says how to see the rest; pane marks the one
	// field the scroll keys move.
	scroll bool
	hang   int
	tally  string
	more   string
	pane   bool
}

// texts returns the field's clean lines.
func (f field) texts() []string {
	if f.lazy != nil {
		return f.lazy()
	}
	return f.lines
}

// view is an ask as the operator sees it. It is made when the ask is held
// and keeps only what the screen shows: short strings cleaned and capped,
// long texts kept raw within bounds (see kept), nothing that shares
// memory with the request.
//
// It keeps the fields' texts, not the fields: asks are held by the
// thousand and only the one on screen is drawn, so its fields are made
// when drawn (fields). Made at hold, each view's fields cost about a
// kilobyte and a half (a field is 152 bytes, and a slice grown by append
// has room for more), most of the prompt's share of 10,000 held asks.
type view struct {
	// agent is the requesting agent's name, for the scope choice's label.
	agent string
	// summary is one line naming the ask, for notices about it.
	summary string
	// valueLabel names the value ("command", "path"); value, message and
	// evidence are what the whole view shows.
	valueLabel string
	value      kept
	// said is what the child wrote in its own words: nil when it wrote
	// nothing, as most do.
	said *childText
	// from, surface, also, cwd and why are the lines of the fields of
	// those names (also is "matched as"); units is nil when the units get
	// no field (showUnits).
	from, also, why []string
	surface, cwd    string
	hasCwd          bool
	units           *unitRows
}

// childText is the message and the evidence of an ask, as kept.
type childText struct{ message, evidence kept }

// message is the child's message, as kept.
func (v *view) message() kept {
	if v.said == nil {
		return kept{}
	}
	return v.said.message
}

// evidence is the child's evidence, as kept.
func (v *view) evidence() kept {
	if v.said == nil {
		return kept{}
	}
	return v.said.evidence
}

// Field ranks: what survives a short screen.
const (
	rankContext = iota
	rankMessage
	rankWhy
	rankEssential
)

// requesterID names whoever sent an ask, for the queue's fair share: its
// session, or when it gave none its agent name, or its process id.
type requesterID struct {
	key   string
	label string
}

func requesterOf(req *wire.Request, t *texts) requesterID {
	r := requesterOfRaw(req)
	return requesterID{t.share(r.key), t.share(r.label)}
}

func requesterOfRaw(req *wire.Request) requesterID {
	id := func(kind, s string) string {
		if len(s) > maxKey {
			sum := sha256.Sum256([]byte(s))
			return kind + "#" + hex.EncodeToString(sum[:])
		}
		return kind + ":" + s
	}
	switch {
	case req.RequesterSessionID != "":
		return requesterID{id("session", req.RequesterSessionID), "session " + Clean(req.RequesterSessionID, capShort)}
	case req.RequesterAgentName != "":
		return requesterID{id("agent", req.RequesterAgentName), "agent '" + Clean(req.RequesterAgentName, capShort) + "'"}
	case req.RequesterPID != 0:
		pid := strconv.Itoa(req.RequesterPID)
		return requesterID{"pid:" + pid, "process " + pid}
	}
	return requesterID{"unnamed", "an unnamed requester"}
}

// entry is one ask held at the prompt: what the screen shows of it and
// what an answer needs, nothing else (serve.Holder: the ask is not kept).
type entry struct {
	view *view
	// grants are the whole-session grants the broker admitted
	// (serve.Ask.Grants); targets[i] are what grants[i] was suggested
	// for, which an edit of it must still match (see suggestedFor).
	grants  []wire.SuggestedGrant
	targets [][]string
	// from is the requester; owner its place in the queue, seq the ask's.
	from  requesterID
	owner *requester
	seq   uint64
	// deadline is when the prompt timeout withdraws the ask; zero when
	// none is set.
	deadline time.Time
	// done hears the ask's fate, once: whoever takes the entry out of the
	// queue (an answer, a withdrawal, Close) calls it, outside the lock.
	done func(decision.Decision)
	// prev and next link the requester's asks; queued says the entry is
	// waiting or on screen.
	prev, next *entry
	queued     bool
}

// newEntry is hold for tests: an ask, no home directory.
func newEntry(ask serve.Ask) *entry { return hold(&ask, "", nil) }

// hold makes the entry of an ask: its view and what an answer needs,
// copied out of the ask, so that the caller's ask (and its payload) can
// go as soon as this returns. home expands `~` in a suggested pattern
// when the editor works out what it was suggested for.
//
// t shares the texts that many held asks repeat (see texts).
func hold(ask *serve.Ask, home string, t *texts) *entry {
	v := describe(ask, t)
	e := &entry{view: &v, from: requesterOf(&ask.Request, t)}
	if ask.Request.AccessIntent == nil {
		// A whole-session grant is consulted only for asks that carry
		// access facts, never for the next ask of a child that sends
		// none (serve.Ask): offering it would record nothing useful.
		return e
	}
	for _, g := range ask.Grants {
		g = wire.SuggestedGrant{Surface: strings.Clone(g.Surface), Pattern: strings.Clone(g.Pattern)}
		e.grants = append(e.grants, g)
		e.targets = append(e.targets, suggestedFor(ask, g, home))
	}
	return e
}

// grantable reports whether "yes, for this session" offers the scope
// choice: only when the broker admitted grants the whole session would
// record.
func (e *entry) grantable() bool { return len(e.grants) > 0 }

// requesterUser is who asked as the transport vouches for it (the
// isolation mode): "uid 61002 (alice)", or the uid alone.
func requesterUser(ask *serve.Ask) string {
	if ask.RequesterUser == "" {
		return fmt.Sprintf("uid %d", ask.RequesterUID)
	}
	return fmt.Sprintf("uid %d (%s)", ask.RequesterUID, Clean(ask.RequesterUser, capShort))
}

// agentTrustLine says how far the agent name the rules applied was
// believed for its overrides (rules.AgentTrust), "" when no agent
// overrides were concerned: the name is the child's claim, vouched for
// only by the uids the operator listed for that agent.
func agentTrustLine(ask *serve.Ask) string {
	name := ask.Request.RequesterAgentName
	if ai := ask.Request.AccessIntent; ai != nil {
		name = ai.Principal.AgentName
	}
	name = Clean(name, capShort)
	switch ask.Resolution.AgentTrust {
	case rules.AgentClaimed:
		return fmt.Sprintf("agent '%s' claimed, not vouched (same uid, not a boundary): its overrides apply as written", name)
	case rules.AgentNotVouched:
		return fmt.Sprintf("agent '%s' claimed, not vouched for %s: its overrides can only narrow", name, requesterUser(ask))
	case rules.AgentVouched:
		return fmt.Sprintf("agent '%s' vouched for %s: its overrides apply", name, requesterUser(ask))
	}
	return ""
}

// describe makes the view of an ask: every string the child sent is
// cleaned here or, for the long ones kept raw, when drawn. t shares the
// lines that a requester's asks repeat.
func describe(ask *serve.Ask, t *texts) view {
	req := &ask.Request
	intent := req.AccessIntent
	v := view{agent: t.share(Clean(req.RequesterAgentName, capShort))}

	from := fmt.Sprintf("'%s' · session %s", v.agent, Clean(req.RequesterSessionID, capShort))
	if intent != nil && intent.Principal.AgentName != "" && intent.Principal.AgentName != req.RequesterAgentName {
		from += fmt.Sprintf(" (rules apply to agent '%s')", Clean(intent.Principal.AgentName, capShort))
	}
	if ask.Isolated {
		from += " · " + requesterUser(ask)
	}
	lines := []string{from}
	if trust := agentTrustLine(ask); trust != "" {
		lines = append(lines, trust)
	}
	v.from = t.shareAll(lines)

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
	v.surface = t.share(surfaceLine)

	value := req.Value
	if value == "" && intent != nil && len(intent.MatchValues) > 0 {
		value = intent.MatchValues[0]
	}
	v.valueLabel = valueLabel(surface, intent)
	v.value = keep(value, keepValueHead, keepValueTail)
	v.summary = fmt.Sprintf("'%s' %s", v.agent, cut(Clean(value, capShort), 40))
	if units := ask.Resolution.Units; showUnits(units) {
		v.units = keepUnits(units)
	}

	if intent != nil {
		var also []string
		hidden := 0 // aliases past maxMatchValues: said, never dropped silently
		seen := map[string]bool{value: true}
		for _, m := range intent.MatchValues {
			if !seen[m] {
				if len(also) < maxMatchValues {
					also = append(also, Clean(m, capLine))
				} else {
					hidden++
				}
			}
			seen[m] = true
		}
		if b := intent.BoundaryValue; b != nil && !seen[*b] {
			if len(also) < maxMatchValues {
				also = append(also, Clean(*b, capLine)+" (boundary)")
			} else {
				hidden++
			}
		}
		if hidden > 0 {
			also = append(also, fmt.Sprintf("… and %d more", hidden))
		}
		v.also = also
		if intent.RequesterCwd != "" {
			v.cwd, v.hasCwd = t.share(Clean(intent.RequesterCwd, capLine)), true
		}
	}
	v.why = t.shareAll(why(ask))
	said := childText{
		message:  keep(req.Message, keepContextHead, keepContextTail),
		evidence: keepPieces(evidence(req.Payload), keepContextHead, keepContextTail),
	}
	if !said.message.empty() || !said.evidence.empty() {
		v.said = &said
	}
	return v
}

// fields are the view's fields, in the order they are drawn: what the
// ask is, then why, then what the child wrote in its own words, last and
// behind the gutter.
func (v *view) fields() []field {
	out := make([]field, 0, 9)
	out = append(out,
		field{label: "from", lines: v.from, wrap: 2, rank: rankEssential},
		field{label: "surface", lines: []string{v.surface}, wrap: 1, rank: rankEssential},
		field{
			label: v.valueLabel, wrap: valueLines, min: 3, rank: rankEssential, whole: "the whole " + v.valueLabel,
			lazy: func() []string {
				if v.value.empty() {
					return []string{"(not given)"}
				}
				return []string{v.value.line()}
			},
		})
	if v.units != nil {
		out = append(out, v.units.field())
	}
	if len(v.also) > 0 {
		out = append(out, field{label: "matched as", lines: v.also, wrap: 1, rank: rankWhy})
	}
	if v.hasCwd {
		out = append(out, field{label: "cwd", lines: []string{v.cwd}, wrap: 1, rank: rankContext})
	}
	out = append(out, field{label: "why", lines: v.why, wrap: 2, rank: rankWhy})
	if m := v.message(); !m.empty() {
		out = append(out, field{label: "message from the subagent", lazy: m.block, wrap: messageLines, gutter: true, rank: rankMessage})
	}
	if ev := v.evidence(); !ev.empty() {
		out = append(out, field{label: "evidence from the subagent", lazy: ev.block, wrap: evidenceLines, gutter: true, rank: rankContext})
	}
	return out
}

// grantField lists the grants the whole session would record, each in
// full; past its window, a last line says how to see every one.
func grantField(grants []wire.SuggestedGrant) field {
	lines := make([]string, len(grants))
	for i, g := range grants {
		lines[i] = grantText(g)
	}
	return field{
		label: "grant", lines: lines, wrap: grantLines, rank: rankEssential,
		scroll: true, hang: 2, more: "s lists every one in full",
	}
}

// grantText shows a grant, cleaned and whole.
func grantText(g wire.SuggestedGrant) string {
	return Clean(g.Surface, 0) + ": " + Clean(g.Pattern, 0)
}

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

// noScope says what "yes, for this session" does for an ask without
// access facts: no whole-session grant would ever answer the next ask of
// its child, which will not carry them either (serve.Ask).
const noScope = "s is this subagent only: a whole-session grant would never match its next ask"

// why says what made the rules ask: the rule that asked, a floor (the
// child's, or one the broker found in a unit), the bash units that asked
// when the units field does not show them, or that the rules were not
// consulted, the child having sent no access facts (a pi 20.x child).
func why(ask *serve.Ask) []string {
	intent := ask.Request.AccessIntent
	res := ask.Resolution
	if intent == nil {
		if res.Action == "" {
			return []string{serve.NoAccessFacts + ": the rules were not consulted", noScope}
		}
		// Matched by its display value (legacyBashDisplayMatch).
		asked := "no rule matched: the default is ask"
		switch {
		case res.Floor != "":
			asked = fmt.Sprintf("floor %s: a unit asks even where a rule allows (%s)", Clean(res.Floor, capShort), ruleText(res.Rule))
		case res.Rule.Origin != rules.OriginDefault && res.Rule.Origin != "":
			asked = ruleText(res.Rule) + " says ask"
		}
		return []string{asked, "matched by its display value (" + serve.LegacyBashDisplayMatchKey + "): " + serve.NoAccessFacts, noScope}
	}
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
// tolerantly, one line each ("label: text — detail"), raw: the payload is
// opaque, untrusted JSON, so anything not shaped like {label, text,
// detail} strings is skipped. It returns the lines as pieces of text,
// most of them slices of the payload: a payload may be a megabyte, and
// thousands may arrive, so nothing is copied but what is kept (see
// keepPieces).
func evidence(payload json.RawMessage) [][]byte {
	if !strictjson.Valid(payload) {
		return nil
	}
	var out [][]byte
	members := strictjson.Root(payload).Members()
	for members.Next() {
		if string(members.Key().Text()) != "evidence" {
			continue
		}
		items := members.Value().Items()
		for items.Next() {
			line := evidenceLine(items.Value())
			if len(line) == 0 {
				continue
			}
			if len(out) > 0 {
				out = append(out, []byte("\n"))
			}
			out = append(out, line...)
		}
	}
	return out
}

// evidenceLine is one evidence entry: its label, text and detail strings
// that are not blank, with their separators; nil when it has none.
func evidenceLine(entry strictjson.Value) [][]byte {
	var parts [3][]byte
	members := entry.Members()
	for members.Next() {
		v := members.Value()
		if v.Kind() != strictjson.KindString {
			continue
		}
		i := slices.Index([]string{"label", "text", "detail"}, string(members.Key().Text()))
		if text := v.Text(); i >= 0 && len(bytes.TrimSpace(text)) > 0 {
			parts[i] = text
		}
	}
	var line [][]byte
	sep := ""
	for _, p := range parts {
		if p == nil {
			continue
		}
		if sep != "" {
			line = append(line, []byte(sep))
		}
		line = append(line, p)
		if sep == "" {
			sep = ": "
		} else {
			sep = " — "
		}
	}
	return line
}
