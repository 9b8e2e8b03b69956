package rules

import (
	"fmt"

	"github.com/seed6639df8c/courier/bashunits"
	"github.com/seed6639df8c/courier/provenance"
	"github.com/seed6639df8c/courier/wire"
)

// Policy is the broker's recorded authority: a config's rules composed
// with the broker's session rules, with yolo applied, behind the
// self-approval guard. It answers serving-side asks (the first step of docs/ARCHITECTURE.md's request path).
//
// A Policy is immutable and safe for concurrent use; only its
// SessionRules change, and they are safe for concurrent use too. To
// reload a config, build a new Policy that shares the old SessionRules.
type Policy struct {
	yolo bool
	home string
	// global is the default rule followed by the config's global rules,
	// in composition order, yolo already applied.
	global []compiledRule
	// agents holds, for each configured agent, the same with the agent's
	// rules appended (and the agent's default, if it has one, in front),
	// and the uids its overrides are vouched for in isolation mode.
	agents   map[string]agentRules
	sessions *SessionRules
	guard    guard
}

// Options are what a Policy needs besides its config.
type Options struct {
	// Home is the home directory that `~`, `$HOME` and `${HOME}` expand
	// to, in patterns and in the guard. Empty leaves them literal.
	Home string
	// Protected lists the trees the self-approval guard denies: the
	// mailbox root and the agent directory, at least, and the broker's
	// own files (its config, its grants journals, its review log); a tree
	// may be a single file. Each must be absolute (or `~`-prefixed). Symbolic links in them are resolved
	// once, here, and both spellings are protected, because a child
	// sends canonical paths.
	Protected []string
	// Sessions are the broker's session rules; nil starts an empty set.
	// Pass the previous Policy's Sessions() when reloading a config.
	Sessions *SessionRules
}

// NewPolicy composes cfg. It fails only when a protected path is unusable.
func NewPolicy(cfg *Config, opts Options) (*Policy, error) {
	g, err := newGuard(opts.Home, opts.Protected)
	if err != nil {
		return nil, err
	}
	p := &Policy{yolo: cfg.YoloMode, home: opts.Home, sessions: opts.Sessions, guard: g}
	if p.sessions == nil {
		p.sessions = NewSessionRules(opts.Home)
	}
	def := implicitDefault
	if cfg.Permission.Default != nil {
		def = *cfg.Permission.Default
	}
	p.global = p.compose(def, cfg.Permission.Rules, nil)
	p.agents = make(map[string]agentRules, len(cfg.Agents))
	for name, perm := range cfg.Agents {
		agentDef := def
		if perm.Default != nil {
			agentDef = *perm.Default
		}
		p.agents[name] = agentRules{
			rules: p.compose(agentDef, cfg.Permission.Rules, perm.Rules),
			users: cfg.AgentUsers[name],
		}
	}
	return p, nil
}

// compose builds default → global → agent, rewriting asks under yolo.
func (p *Policy) compose(def Rule, global, agent []Rule) []compiledRule {
	out := make([]compiledRule, 0, 1+len(global)+len(agent))
	for _, layer := range [][]Rule{{def}, global, agent} {
		for _, r := range layer {
			if p.yolo {
				r = yoloRewrite(r)
			}
			out = append(out, compileRule(r, p.home))
		}
	}
	return out
}

// Sessions returns the session rules the policy consults.
func (p *Policy) Sessions() *SessionRules { return p.sessions }

// YoloMode reports whether asks are rewritten to allows.
func (p *Policy) YoloMode() bool { return p.yolo }

// Query is what the child fixed about an ask (its accessIntent), minus
// the provenance the rules never read.
type Query struct {
	// Surface is the gate surface: path, path_write, bash, a tool name...
	Surface string
	// MatchValues are matched as given, never re-derived: aliases of one
	// path on path surfaces, otherwise (normally) one value.
	MatchValues []string
	// BoundaryValue is the canonical path on path surfaces, or nil. An
	// allow needs it allowed (docs/decisions/0012-path-aliases.md), and the
	// self-approval guard tests it.
	BoundaryValue *string
	// Agent is principal.agentName, which selects agent overrides.
	Agent string
	// Floor is the child's floor sentinel, empty when none.
	Floor string
	// AskingUnits are the bash chain units that asked; when present, they
	// are judged instead of MatchValues.
	AskingUnits []AskingUnit
	// Cwd is the requester's working directory. Only the self-approval
	// guard reads it, to place a relative path or word; matching never
	// does.
	Cwd string
	// Isolated says the broker knows the requester's uid from the
	// transport (isolation mode: the request file's owner), so UID is
	// the requester's and an agent's overrides apply in full only when
	// the agent's users list holds it.
	Isolated bool
	// UID is the requesting uid; meaningful only when Isolated.
	UID int
}

// AskingUnit is one bash chain unit the child left asking.
type AskingUnit struct {
	Command string
	// Floor is this unit's floor sentinel, empty when none.
	Floor string
}

// QueryFromIntent builds the Query for a request's access intent. A nil
// intent (absent or malformed on the wire) gives the zero Query, which
// Resolve answers with ask without consulting any rule, as pi does.
func QueryFromIntent(ai *wire.AccessIntent) Query {
	if ai == nil {
		return Query{}
	}
	q := Query{
		Surface:       ai.Surface,
		MatchValues:   ai.MatchValues,
		BoundaryValue: ai.BoundaryValue,
		Agent:         ai.Principal.AgentName,
		Floor:         ai.Floor,
		Cwd:           ai.RequesterCwd,
	}
	for _, u := range ai.AskingUnits {
		q.AskingUnits = append(q.AskingUnits, AskingUnit{Command: u.Command, Floor: u.Floor})
	}
	return q
}

// Resolution is the policy's answer to a Query.
type Resolution struct {
	// Action is allow or deny (answer now) or ask (escalate).
	Action Action
	// Reason is a deny's teaching text, empty when the rule has none.
	Reason string
	// Surface is the query's surface, which decidedBy records.
	Surface string
	// Origin and Pattern are what decidedBy records: the deciding rule's,
	// except that a child floor replaces the pattern with the floor (and,
	// under yolo, the origin with yolo). Pattern is nil for a surface-wide
	// action and the default; it may be shared with the policy, so it must
	// not be written through.
	Origin  Origin
	Pattern *string
	// Rule is the rule that decided, as composed (yolo applied).
	Rule Rule
	// EvaluatedSurface is the surface the rule was matched on: the
	// query's, a directional member of a bare family, or bash for an
	// asking unit.
	EvaluatedSurface string
	// Value is the match value or unit command the rule matched.
	Value string
	// Floor is the floor that changed the outcome, empty when none did.
	Floor string
	// Units are the bash units the answer combines, each with its own
	// answer, in source order: nil off bash, and for one unit without a
	// floor, whose answer is the Resolution itself.
	Units []UnitResolution
	// AgentTrust says how far the query's agent name was believed: the
	// prompt and the review log say so.
	AgentTrust AgentTrust
}

// UnitResolution is the answer for one unit of a bash command line.
type UnitResolution struct {
	// Command is the unit as written.
	Command string
	// Floor is the floor sentinel that applied to the unit (its own, or
	// the child's), empty when none did.
	Floor string
	// Why says what raised the unit's own floor, empty when none did.
	Why string
	// Action, Origin, Pattern and Rule are the unit's answer, as in
	// Decision; Action is after the floor.
	Action  Action
	Origin  Origin
	Pattern *string
	Rule    Rule
}

// DecidedBy returns the decision's provenance: session_approval for a
// session grant, yolo for yolo mode, otherwise rule. It is nil for an ask,
// which the policy did not decide.
func (d Resolution) DecidedBy() provenance.Source {
	if d.Action != Allow && d.Action != Deny {
		return nil
	}
	return source(d.Surface, d.Origin, d.Pattern)
}

// String summarizes the decision for logs and tests.
func (d Resolution) String() string {
	pat := "null"
	if d.Pattern != nil {
		pat = fmt.Sprintf("%q", *d.Pattern)
	}
	return fmt.Sprintf("%s by %s %s %s", d.Action, d.Origin, d.EvaluatedSurface, pat)
}

// Resolve answers q: the self-approval guard first, then the composed
// ruleset, then the floor. A query without a surface (no access intent)
// is an ask.
//
// For each value the config's own answer is found first (the last
// matching rule); a deny stands, and otherwise a matching session grant
// wins over the config's allow or ask (docs/decisions/0011-deny-above-grants.md).
//
// With asking units, each unit is resolved on bash with its own floor and
// the most restrictive answer wins (the first on a tie); MatchValues and
// the chain-level Floor are then not consulted, as in pi (docs/decisions/0010-bash-units.md).
// Otherwise a bare family surface is resolved on its _read and _write
// members, most restrictive wins; on a path surface the values, cleaned
// lexically, are aliases of one path: a deny on any denies and an allow
// needs the canonical path allowed (docs/decisions/0012-path-aliases.md);
// on any other surface several values are resolved one by one, most
// restrictive wins.
func (p *Policy) Resolve(q Query) Resolution {
	return p.resolve(q, nil)
}

func (p *Policy) resolve(q Query, tr *trace) Resolution {
	trust := p.agentTrust(q)
	if q.Surface == "" {
		// No access intent: pi floors such a request to ask, even under
		// yolo, and so does courier.
		return Resolution{Action: Ask, AgentTrust: trust}
	}
	if isPathSurface(q.Surface) {
		q = cleanPathQuery(q)
	}
	// Split once: the guard reads every unit's words, the rules judge
	// the units.
	var buf [4]bashLine
	lines := splitBash(q, buf[:0])
	if d, hit := p.guard.check(q, lines); hit {
		if tr != nil {
			tr.guard = true
		}
		d.AgentTrust = trust
		return d
	}
	cfg, narrow := p.rulesFor(q.Agent, trust)
	sess := p.sessions.load()
	var d Resolution
	if judged(lines) {
		b := bashEval{p: p, cfg: cfg, narrow: narrow, sess: sess, tr: tr}
		for _, l := range lines {
			if l.judged {
				b.line(l.units, l.floor)
			}
		}
		d = b.decision()
	} else {
		d = p.judgeValues(cfg, sess, q, tr)
		if narrow != nil {
			d = stricter(d, tr.globalOnly(func(tr *trace) Resolution { return p.judgeValues(narrow, sess, q, tr) }))
		}
	}
	if d.Action != Deny {
		if gd, hit := p.guard.checkMoves(q, lines); hit {
			if tr != nil {
				tr.guardMoves = true
			}
			gd.AgentTrust = trust
			return gd
		}
	}
	d.Surface = q.Surface
	d.AgentTrust = trust
	return d
}

// judgeValues resolves a query's match values (not its asking units)
// against the ruleset cfg and the session grants, then its floor.
func (p *Policy) judgeValues(cfg, sess []compiledRule, q Query, tr *trace) Resolution {
	d := p.evalSurface(cfg, sess, q.Surface, q.MatchValues, q.BoundaryValue, tr)
	if isPathSurface(q.Surface) {
		d = p.pathSpellings(cfg, q, d, tr)
	}
	return p.honorFloor(d, q.Floor, false, tr)
}

// bashLine is one command line of a bash ask, split into units.
type bashLine struct {
	units []bashunits.Unit
	// floor is the floor a unit without one of its own takes.
	floor string
	// judged says the rules judge the line: the asking units when there
	// are any, else the match values. The others meet only the guard.
	judged bool
}

// splitBash appends to lines the asking units and, on bash, the match
// values, split.
func splitBash(q Query, lines []bashLine) []bashLine {
	for _, u := range q.AskingUnits {
		lines = append(lines, bashLine{units: bashunits.Split(u.Command), floor: u.Floor, judged: true})
	}
	if q.Surface == "bash" {
		for _, v := range q.MatchValues {
			lines = append(lines, bashLine{units: bashunits.Split(v), floor: q.Floor, judged: len(q.AskingUnits) == 0})
		}
	}
	return lines
}

func judged(lines []bashLine) bool {
	for _, l := range lines {
		if l.judged {
			return true
		}
	}
	return false
}

// bashEval judges bash command lines unit by unit: a rule or a session
// grant is written for one simple command, and a line is never matched
// as one string, whoever split it (the child's asking units are split
// again, so a foreign child's compound "unit" gains nothing). Each unit is
// matched as written and, when it differs, with its quotes removed; each
// takes its own floor, else the one it came with; the most restrictive
// answer wins, the first on a tie. A floor found in the unit itself stands
// over session grants (see honorFloor).
type bashEval struct {
	p         *Policy
	cfg, sess []compiledRule
	// narrow is the global-only ruleset each unit is judged by too when
	// the agent's overrides may only narrow (see rulesFor); nil otherwise.
	narrow []compiledRule
	tr     *trace
	d      Resolution
	units  []UnitResolution
}

func (b *bashEval) line(units []bashunits.Unit, floor string) {
	for _, u := range units {
		f, own := floor, u.Floor != ""
		if own {
			f = u.Floor
		}
		values := []string{u.Command}
		if u.Literal != "" {
			values = append(values, u.Literal)
		}
		ud := b.p.honorFloor(b.p.evalMember(b.cfg, b.sess, "bash", values, nil, b.tr), f, own, b.tr)
		if b.narrow != nil {
			ud = stricter(ud, b.tr.globalOnly(func(tr *trace) Resolution {
				return b.p.honorFloor(b.p.evalMember(b.narrow, b.sess, "bash", values, nil, tr), f, own, tr)
			}))
		}
		if len(b.units) == 0 || ud.Action.MoreRestrictive(b.d.Action) {
			b.d = ud
		}
		b.units = append(b.units, UnitResolution{
			Command: u.Command, Floor: f, Why: u.Why,
			Action: ud.Action, Origin: ud.Origin, Pattern: ud.Pattern, Rule: ud.Rule,
		})
	}
}

// decision is the most restrictive unit's answer, with every unit's when
// there is more to say than that one answer: several units, or a floor.
func (b *bashEval) decision() Resolution {
	if len(b.units) > 1 || len(b.units) == 1 && b.units[0].Floor != "" {
		b.d.Units = b.units
	}
	return b.d
}

// honorFloor clamps an allow with a floor (pi's honorChildFloor): a deny
// or ask stands, and otherwise the allow becomes an ask, or under yolo an
// allow by yolo that reports the floor as its pattern. A session grant
// stands over the child's floor (the user approved that command, as in
// pi) but not over a floor the broker found in the command itself
// (overGrants): a grant `curl *` approved a curl, not a curl that writes
// ~/.bashrc or a shell fed by it (docs/decisions/0010-bash-units.md).
func (p *Policy) honorFloor(d Resolution, floor string, overGrants bool, tr *trace) Resolution {
	if floor == "" || d.Action != Allow || d.Origin == OriginSession && !overGrants {
		return d
	}
	f := floor
	d.Pattern, d.Floor = &f, floor
	if p.yolo {
		d.Origin = OriginYolo
	} else {
		d.Action = Ask
	}
	if tr != nil {
		tr.floor(floor, d)
	}
	return d
}

// evalSurface folds a bare family onto its members, most restrictive
// first-wins, as pi's PermissionResolver does.
func (p *Policy) evalSurface(cfg, sess []compiledRule, surface string, values []string, boundary *string, tr *trace) Resolution {
	members := familyMembers(surface)
	if members == nil {
		return p.evalMember(cfg, sess, surface, values, boundary, tr)
	}
	var d Resolution
	for i, m := range members {
		md := p.evalMember(cfg, sess, m, values, boundary, tr)
		if i == 0 || md.Action.MoreRestrictive(d.Action) {
			d = md
		}
	}
	return d
}

// evalMember evaluates one concrete surface.
func (p *Policy) evalMember(cfg, sess []compiledRule, surface string, values []string, boundary *string, tr *trace) Resolution {
	if isPathSurface(surface) {
		return evalAliases(cfg, sess, surface, values, boundary, tr)
	}
	if len(values) == 0 {
		values = anyValue // pi looks up "*" when there is no value
	}
	if len(values) == 1 {
		return lookup(cfg, sess, surface, values, tr)
	}
	var d Resolution
	for i := range values {
		vd := lookup(cfg, sess, surface, values[i:i+1:i+1], tr)
		if i == 0 || vd.Action.MoreRestrictive(d.Action) {
			d = vd
		}
	}
	return d
}

var anyValue = []string{"*"}

// lookup finds the config's answer, the last config rule whose surface
// matches and whose pattern matches any value. When no config deny rule
// (global or agent layer) matches a value at all, the last matching
// session grant, when there is one, decides instead; otherwise the
// config's own answer stands. A grant given for the whole session never
// overrides a deny the operator wrote, even one a later, wider config rule
// shadows (`~/.ssh/*` deny under `*` ask): the operator wrote that deny
// for the grant's value too (docs/decisions/0011-deny-above-grants.md).
func lookup(cfg, sess []compiledRule, surface string, values []string, tr *trace) Resolution {
	r, v := findLast(cfg, surface, values)
	if r == nil || r.Action != Deny && !denyMatches(cfg, surface, values) {
		if g, gv := findLast(sess, surface, values); g != nil {
			r, v = g, gv
		}
	}
	if r == nil {
		// Unreachable while the default rule matches everything; kept so a
		// future ruleset without one still fails towards asking.
		c := compileRule(implicitDefault, "")
		r, v = &c, values[0]
	}
	if tr != nil {
		tr.record(cfg, sess, surface, values, r)
	}
	d := Resolution{
		Action:           r.Action,
		Origin:           r.Origin,
		Pattern:          r.patternPtr,
		Rule:             r.Rule,
		EvaluatedSurface: surface,
		Value:            v,
	}
	if r.Action == Deny {
		d.Reason = r.Reason
	}
	return d
}

// denyMatches reports whether a deny rule of the config's layers (the
// default aside: a default deny would keep every grant from applying)
// matches a value on surface.
func denyMatches(cfg []compiledRule, surface string, values []string) bool {
	for i := range cfg {
		r := &cfg[i]
		if r.Action != Deny || r.Origin == OriginDefault || !r.surface.Match(surface) {
			continue
		}
		for _, v := range values {
			if r.pattern.Match(v) {
				return true
			}
		}
	}
	return false
}

func findLast(rs []compiledRule, surface string, values []string) (*compiledRule, string) {
	for i := len(rs) - 1; i >= 0; i-- {
		r := &rs[i]
		if !r.surface.Match(surface) {
			continue
		}
		for _, v := range values {
			if r.pattern.Match(v) {
				return r, v
			}
		}
	}
	return nil, ""
}

// isPathSurface reports whether values on surface are aliases of one
// path: pi's PATH_SURFACES, the path-bearing tools, the two families and
// their directional members.
func isPathSurface(surface string) bool {
	switch surface {
	case "read", "write", "edit", "find", "grep", "ls",
		"path", "path_read", "path_write",
		"external_directory", "external_directory_read", "external_directory_write":
		return true
	}
	return false
}
