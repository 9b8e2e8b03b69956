package rules

import (
	"bytes"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/seed6639df8c/courier/provenance"
)

// Explanation says why the policy answers a query the way it does, for
// `broker check`: the answer, the rule that decided it, and every rule
// that matched along the way, in ruleset order (evaluation scans that list
// from the end, so the last match decides). It marshals to JSON as
// is; WriteText renders it for a terminal.
type Explanation struct {
	Surface  string   `json:"surface"`
	Values   []string `json:"values"`
	Boundary *string  `json:"boundary,omitempty"`
	Agent    string   `json:"agent,omitempty"`
	// AgentTrust is how the agent name was taken (Resolution.AgentTrust);
	// empty when the agent has no overrides, which need no vouching.
	AgentTrust AgentTrust `json:"agentTrust,omitempty"`
	// UID is the requesting uid, present when the query came with one
	// (isolation mode).
	UID         *int         `json:"uid,omitempty"`
	Floor       string       `json:"floor,omitempty"`
	AskingUnits []AskingUnit `json:"askingUnits,omitempty"`
	// Action is the final answer.
	Action Action `json:"action"`
	// Reason is a deny's teaching text.
	Reason string `json:"reason,omitempty"`
	// DecidedBy is what the broker would write as decidedBy; null for ask.
	DecidedBy provenance.Source `json:"decidedBy"`
	// Rule is the rule that matched and decided (before any floor).
	Rule ExplainedRule `json:"rule"`
	// FloorApplied is the child floor that changed the rule's allow: into
	// an ask, or under yolo into an allow by yolo. Empty when none did.
	FloorApplied string `json:"floorApplied,omitempty"`
	// Units are the units of a bash ask, each with its own answer and the
	// rule behind it; the answer is the most restrictive of them.
	Units []ExplainedUnit `json:"units,omitempty"`
	// Steps are the evaluations the answer combines: one per surface and
	// value set (several for a bare family, several values on a non-path
	// surface, or asking units).
	Steps []Step `json:"steps"`
	// Notes explain the composition: agent overrides, yolo, folds, floors,
	// the built-in guard.
	Notes []string `json:"notes,omitempty"`
}

// Step is one evaluation of the ruleset on one surface.
type Step struct {
	Surface string   `json:"surface"`
	Values  []string `json:"values"`
	// GlobalOnly marks a step of the pass without the agent's overrides,
	// made when they are not vouched for (AgentNotVouched): the answer
	// is the stricter of the two passes.
	GlobalOnly bool `json:"globalOnly,omitempty"`
	// Action is what the last matching rule says, before any floor.
	Action Action `json:"action"`
	// Matched lists every rule that matched, in ruleset order (default,
	// global, agent, session); evaluation scans from the end, so the last
	// one decides.
	Matched []ExplainedRule `json:"matched"`
	// Outranked lists the session grants that matched but did not decide:
	// the config's own answer was a deny, which a grant never overrides.
	// They are left out of Matched.
	Outranked []ExplainedRule `json:"outranked,omitempty"`
}

// ExplainedUnit is one unit of a bash ask as Explain reports it.
type ExplainedUnit struct {
	Command string `json:"command"`
	// Floor is the floor sentinel that applied to the unit, and Why what
	// raised the unit's own floor.
	Floor string `json:"floor,omitempty"`
	Why   string `json:"why,omitempty"`
	// Action is the unit's answer, after the floor.
	Action Action `json:"action"`
	// Rule is the rule that matched the unit (before any floor).
	Rule ExplainedRule `json:"rule"`
}

// ExplainedRule is a rule as Explain reports it.
type ExplainedRule struct {
	Surface string `json:"surface"`
	// Pattern is null for a surface-wide action and the default.
	Pattern *string `json:"pattern"`
	Action  Action  `json:"action"`
	Origin  Origin  `json:"origin"`
	Reason  string  `json:"reason,omitempty"`
	// At is where the rule was written, file:line:column.
	At string `json:"at,omitempty"`
	// Value is the value the rule matched.
	Value string `json:"value,omitempty"`
}

func explainRule(r *Rule, value string) ExplainedRule {
	return ExplainedRule{
		Surface: r.Surface, Pattern: r.PatternOrNil(), Action: r.Action,
		Origin: r.Origin, Reason: r.Reason, At: r.At, Value: value,
	}
}

// trace collects what Explain reports while resolve runs.
type trace struct {
	// guard and guardMoves say the self-approval guard denied: before
	// the rules, or after them, for a move of a protected tree's ancestor.
	guard, guardMoves bool
	steps             []Step
	notes             []string
	// outranked counts the steps where a config deny stood above a
	// matching session grant.
	outranked int
}

// record lists every rule matching on surface, in composition order. A
// matching config deny leaves the matching session grants outranked,
// whether or not it decided.
func (t *trace) record(cfg, sess []compiledRule, surface string, values []string, decider *compiledRule) {
	// A copy, so that the hot path's values never escape to the heap.
	step := Step{Surface: surface, Values: slices.Clone(values), Action: decider.Action}
	denyAbove := decider.Origin != OriginSession && (decider.Action == Deny || denyMatches(cfg, surface, values))
	for _, layer := range [][]compiledRule{cfg, sess} {
		for i := range layer {
			r := &layer[i]
			if !r.surface.Match(surface) {
				continue
			}
			for _, v := range values {
				if r.pattern.Match(v) {
					if denyAbove && r.Origin == OriginSession {
						step.Outranked = append(step.Outranked, explainRule(&r.Rule, v))
					} else {
						step.Matched = append(step.Matched, explainRule(&r.Rule, v))
					}
					break
				}
			}
		}
	}
	if len(step.Outranked) > 0 {
		t.outranked++
	}
	t.steps = append(t.steps, step)
}

// globalOnly runs judge, a pass over the global-only ruleset for an
// agent whose overrides may only narrow the answer, recording into t
// with its steps marked so.
func (t *trace) globalOnly(judge func(*trace) Resolution) Resolution {
	if t == nil {
		return judge(nil)
	}
	sub := &trace{}
	d := judge(sub)
	for _, s := range sub.steps {
		s.GlobalOnly = true
		t.steps = append(t.steps, s)
	}
	for _, n := range sub.notes {
		if !slices.Contains(t.notes, n) {
			t.notes = append(t.notes, n)
		}
	}
	t.outranked += sub.outranked
	return d
}

func (t *trace) floor(floor string, d Resolution) {
	if d.Action == Ask {
		t.notes = append(t.notes, fmt.Sprintf("the child's floor %s turns the allow into an ask (only a session grant outranks a floor)", floor))
	} else {
		t.notes = append(t.notes, fmt.Sprintf("the child's floor %s would turn the allow into an ask; yolo mode approves it, reporting the floor as the pattern", floor))
	}
}

// Explain resolves q as Resolve does and says why.
func (p *Policy) Explain(q Query) Explanation {
	tr := &trace{}
	d := p.resolve(q, tr)
	e := Explanation{
		Surface: q.Surface, Values: q.MatchValues, Boundary: q.BoundaryValue, Agent: q.Agent,
		Floor: q.Floor, AskingUnits: q.AskingUnits,
		Action: d.Action, Reason: d.Reason, DecidedBy: d.DecidedBy(),
		Rule:         explainRule(&d.Rule, d.Value),
		FloorApplied: d.Floor,
		Steps:        tr.steps,
	}
	if d.AgentTrust != AgentNoOverrides {
		e.AgentTrust = d.AgentTrust
	}
	if q.Isolated {
		uid := q.UID
		e.UID = &uid
	}
	if e.Values == nil {
		e.Values = []string{}
	}
	for _, u := range d.Units {
		e.Units = append(e.Units, ExplainedUnit{
			Command: u.Command, Floor: u.Floor, Why: u.Why, Action: u.Action,
			Rule: explainRule(&u.Rule, u.Command),
		})
	}
	if e.Steps == nil {
		e.Steps = []Step{}
	}
	if q.Surface == "" {
		e.Notes = append(e.Notes, "no surface, so no access intent: the ask goes on to the authorizer chain and the terminal without consulting any rule, even under yolo")
		return e
	}
	if tr.guard {
		e.Notes = append(e.Notes, "built-in self-approval guard: the ask targets the protected tree, so it is denied before any rule is consulted; neither session grants nor yolo mode can override it")
		return e
	}
	if tr.guardMoves {
		e.Notes = append(e.Notes, "built-in self-approval guard: the command moves, removes or re-permissions a directory that holds the protected tree; no rule denied it, so the guard does, and neither session grants nor yolo mode can override it")
	}
	if q.Agent != "" {
		e.Notes = append(e.Notes, agentNote(q, d.AgentTrust))
	}
	if p.yolo {
		e.Notes = append(e.Notes, "yolo mode: every ask rule acts as allow (origin yolo); deny rules stay")
	}
	if isPathSurface(q.Surface) {
		clean := cleanPathQuery(q)
		for i, v := range q.MatchValues {
			if clean.MatchValues[i] != v {
				e.Notes = append(e.Notes, fmt.Sprintf("path values are cleaned lexically before matching: %q is matched as %q", v, clean.MatchValues[i]))
			}
		}
		if b := q.BoundaryValue; b != nil && *clean.BoundaryValue != *b && !slices.Contains(q.MatchValues, *b) {
			e.Notes = append(e.Notes, fmt.Sprintf("path values are cleaned lexically before matching: the boundary %q is matched as %q", *b, *clean.BoundaryValue))
		}
	}
	if n := p.sessions.Len(); n > 0 {
		e.Notes = append(e.Notes, fmt.Sprintf("%d session grant(s) are consulted after the config rules: they win over its allow and ask, but never apply to a value any of its deny rules matches", n))
	}
	if tr.outranked > 0 {
		e.Notes = append(e.Notes, "a session grant matches, but a deny rule of the config matches too: a session grant never overrides a deny of the config, and the config's own answer (its last matching rule) decides")
	}
	switch {
	case len(q.AskingUnits) > 0:
		e.Notes = append(e.Notes, fmt.Sprintf("%d asking unit(s), split again into simple commands: each is resolved on bash with its own floor and the most restrictive answer wins; the match values are not consulted", len(q.AskingUnits)))
	case len(e.Units) > 1:
		e.Notes = append(e.Notes, fmt.Sprintf("the command line is %d simple commands: each is resolved alone and the most restrictive answer wins, so a rule allows the line only if it allows every command", len(e.Units)))
	case familyMembers(q.Surface) != nil:
		m := familyMembers(q.Surface)
		e.Notes = append(e.Notes, fmt.Sprintf("%s is a bare family: it is resolved on %s and %s, and the most restrictive answer wins", q.Surface, m[0], m[1]))
	case (len(q.MatchValues) > 1 || q.BoundaryValue != nil) && isPathSurface(q.Surface):
		e.Notes = append(e.Notes, "the values are aliases of one path: a deny on any of them denies, and an allow needs the canonical path allowed (the boundary value, or else every alias); otherwise it asks")
	case len(q.MatchValues) > 1:
		e.Notes = append(e.Notes, "several values on a non-path surface: each is resolved and the most restrictive answer wins")
	case len(q.MatchValues) == 0:
		e.Notes = append(e.Notes, `no value given: matched as "*", as pi does`)
	}
	e.Notes = append(e.Notes, tr.notes...)
	return e
}

// agentNote says how q's agent name was taken, and so how its overrides
// applied.
func agentNote(q Query, trust AgentTrust) string {
	switch trust {
	case AgentClaimed:
		return fmt.Sprintf("agent %q: its overrides come after the global rules, so they win; the name is the child's claim, which same-uid mode cannot check (docs/THREAT-MODEL.md), so they apply as claimed, not vouched for", q.Agent)
	case AgentVouched:
		return fmt.Sprintf("agent %q: its overrides come after the global rules, so they win; vouched for: the requesting uid %d is in its users", q.Agent, q.UID)
	case AgentNotVouched:
		return fmt.Sprintf("agent %q: not vouched for: the requesting uid %d is not in its users, so its overrides may only make the answer stricter: the answer is the stricter of the one without them (the steps marked global-only) and the one with them, each decided by its own last match", q.Agent, q.UID)
	}
	return fmt.Sprintf("agent %q has no overrides in the config; the global rules apply", q.Agent)
}

// WriteText renders the explanation for a terminal:
//
//	bash "git push --force" → deny
//	  reason      Force-pushing rewrites shared history; push to a new branch instead
//	  decided by  global rule bash "git push --force*" at config.json:9:7
//	  decidedBy   {"kind":"rule","surface":"bash","pattern":"git push --force*","origin":"global"}
//
// followed by a table of matching rules per step, the last match winning,
// and the notes.
func (e *Explanation) WriteText(w io.Writer) error {
	var b bytes.Buffer
	fmt.Fprintf(&b, "%s %s", e.Surface, quoteList(e.Values))
	if e.Boundary != nil {
		fmt.Fprintf(&b, " (boundary %q)", *e.Boundary)
	}
	var who []string
	if e.Agent != "" {
		who = append(who, "agent "+e.Agent)
	}
	if e.AgentTrust != "" {
		who = append(who, strings.ReplaceAll(string(e.AgentTrust), "-", " "))
	}
	if e.UID != nil {
		who = append(who, fmt.Sprintf("uid %d", *e.UID))
	}
	if len(who) > 0 {
		fmt.Fprintf(&b, " (%s)", strings.Join(who, ", "))
	}
	fmt.Fprintf(&b, " → %s\n", e.Action)
	if e.Reason != "" {
		fmt.Fprintf(&b, "  reason      %s\n", e.Reason)
	}
	switch {
	case e.FloorApplied != "" && e.Action == Ask:
		fmt.Fprintf(&b, "  decided by  the floor %s, over %s\n", e.FloorApplied, describeRule(&e.Rule))
	case e.FloorApplied != "":
		fmt.Fprintf(&b, "  decided by  yolo mode, over the child's floor %s and %s\n", e.FloorApplied, describeRule(&e.Rule))
	default:
		fmt.Fprintf(&b, "  decided by  %s\n", describeRule(&e.Rule))
	}
	if e.DecidedBy != nil {
		raw, err := e.DecidedBy.MarshalJSON() // as on the wire: < and > unescaped
		if err != nil {
			return fmt.Errorf("explain: %w", err)
		}
		fmt.Fprintf(&b, "  decidedBy   %s\n", raw)
	} else {
		b.WriteString("  decidedBy   none: an ask goes on to the authorizer chain and the terminal\n")
	}
	if len(e.Units) > 1 || len(e.Units) == 1 && e.Units[0].Floor != "" {
		b.WriteString("\nunits (the most restrictive answer wins):\n")
		tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
		for _, u := range e.Units {
			by := describeRule(&u.Rule)
			if u.Floor != "" && u.Action == Ask && u.Rule.Action == Allow {
				by = "the floor " + u.Floor + ", over " + by
			}
			if u.Why != "" {
				by += " (" + u.Why + ")"
			}
			fmt.Fprintf(tw, "  %s\t%s\t%s\n", u.Action, strconv.Quote(u.Command), by)
		}
		if err := tw.Flush(); err != nil {
			return fmt.Errorf("explain: %w", err)
		}
	}
	for _, s := range e.Steps {
		pass := ""
		if s.GlobalOnly {
			pass = " without the agent's overrides (global-only)"
		}
		fmt.Fprintf(&b, "\nrules matching %s %s%s, in ruleset order (the last match wins):\n", s.Surface, quoteList(s.Values), pass)
		tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
		for i, r := range s.Matched {
			mark := ""
			if i == len(s.Matched)-1 {
				mark = "← decides"
			}
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%s\n", r.Origin, r.Surface, patternText(&r), r.Action, whereText(&r), mark)
		}
		for _, r := range s.Outranked {
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%s\n", r.Origin, r.Surface, patternText(&r), r.Action, whereText(&r), "outranked by the config's deny")
		}
		if err := tw.Flush(); err != nil {
			return fmt.Errorf("explain: %w", err)
		}
	}
	if len(e.Notes) > 0 {
		b.WriteString("\nnotes:\n")
		for _, n := range e.Notes {
			fmt.Fprintf(&b, "  - %s\n", n)
		}
	}
	// tabwriter pads the last aligned column; drop the trailing blanks.
	lines := strings.SplitAfter(b.String(), "\n")
	for i, l := range lines {
		if strings.HasSuffix(l, "\n") {
			lines[i] = strings.TrimRight(l[:len(l)-1], " ") + "\n"
		}
	}
	_, err := io.WriteString(w, strings.Join(lines, ""))
	return err
}

func describeRule(r *ExplainedRule) string {
	switch r.Origin {
	case OriginBuiltin:
		return "the built-in self-approval guard, protecting " + patternText(r)
	case OriginDefault:
		return "the default, permission[\"*\"], " + whereText(r)
	}
	return fmt.Sprintf("%s rule %s %s, %s", r.Origin, r.Surface, patternText(r), whereText(r))
}

func patternText(r *ExplainedRule) string {
	if r.Pattern == nil {
		return "(all)"
	}
	return strconv.Quote(*r.Pattern)
}

func whereText(r *ExplainedRule) string {
	switch {
	case r.At != "":
		return "at " + r.At
	case r.Origin == OriginSession:
		return "session grant"
	case r.Origin == OriginBuiltin:
		return "built in"
	case r.Origin == OriginDefault || r.Origin == OriginYolo && r.Pattern == nil:
		return "implicit (no \"*\" in the config)"
	}
	return "-"
}

func quoteList(vs []string) string {
	q := make([]string, len(vs))
	for i, v := range vs {
		q[i] = strconv.Quote(v)
	}
	return strings.Join(q, ", ")
}
