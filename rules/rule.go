package rules

import "github.com/seed6639df8c/courier/provenance"

// Rule is one entry of the composed ruleset: on surfaces matching Surface,
// values matching Pattern get Action.
type Rule struct {
	// Surface is the surface key, itself a wildcard pattern.
	Surface string
	// Pattern is the value pattern; "*" for a surface-wide action.
	Pattern string
	// SurfaceWide marks a surface-wide action (`"bash": "deny"`) and the
	// default (permission["*"]); their decidedBy pattern is null.
	SurfaceWide bool
	Action      Action
	// Reason is a deny rule's teaching text, empty when it has none.
	Reason string
	Origin Origin
	// At is where the rule was written, "file:line:column"; empty for
	// session grants, built-in rules and the implicit default.
	At string
}

// PatternOrNil returns the pattern decidedBy records: nil for a
// surface-wide action or the default, else the pattern.
func (r *Rule) PatternOrNil() *string {
	if r.SurfaceWide {
		return nil
	}
	p := r.Pattern
	return &p
}

// implicitDefault is the default when permission["*"] is omitted: ask, as
// in pi.
var implicitDefault = Rule{Surface: "*", Pattern: "*", SurfaceWide: true, Action: Ask, Origin: OriginDefault}

// compiledRule is a Rule with its matchers.
type compiledRule struct {
	Rule
	surface, pattern Pattern
	// patternPtr is PatternOrNil, computed once so a Resolution costs no
	// allocation.
	patternPtr *string
}

func compileRule(r Rule, home string) compiledRule {
	return compiledRule{
		Rule:       r,
		surface:    CompilePattern(r.Surface, home),
		pattern:    CompilePattern(r.Pattern, home),
		patternPtr: r.PatternOrNil(),
	}
}

// yoloRewrite is pi's composition-stage yolo: every ask becomes an allow
// with origin yolo; allows and denies pass through.
func yoloRewrite(r Rule) Rule {
	if r.Action == Ask {
		r.Action = Allow
		r.Origin = OriginYolo
	}
	return r
}

// source returns the decidedBy for a decision this rule made on the
// query surface. pi's serving node stamps the ask's own surface (the
// child's accessIntent.surface), not the rule's key, which may be a
// wildcard or a directional member.
func source(querySurface string, origin Origin, pattern *string) provenance.Source {
	switch origin {
	case OriginSession:
		return provenance.SessionApproval{Surface: querySurface, Pattern: pattern}
	case OriginYolo:
		return provenance.Yolo{Pattern: pattern}
	}
	o := string(origin)
	return provenance.Rule{Surface: querySurface, Pattern: pattern, Origin: &o}
}
