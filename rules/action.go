package rules

import "fmt"

// Action is what a rule says about an ask: allow it, ask someone, or deny it.
type Action string

// The three actions of pi's permission config.
const (
	Allow Action = "allow"
	Ask   Action = "ask"
	Deny  Action = "deny"
)

// Valid reports whether a is one of the three actions.
func (a Action) Valid() bool { return a == Allow || a == Ask || a == Deny }

// restrictiveness orders actions for "most restrictive wins": deny > ask >
// allow. An unknown action ranks as deny so that a zero Resolution can never
// read as a grant.
func (a Action) restrictiveness() int {
	switch a {
	case Allow:
		return 0
	case Ask:
		return 1
	}
	return 2
}

// MoreRestrictive reports whether a is strictly more restrictive than b.
// Ties are not "more", so a fold that keeps its current winner on a tie
// keeps the first worst result, as pi's mostRestrictiveOf does.
func (a Action) MoreRestrictive(b Action) bool { return a.restrictiveness() > b.restrictiveness() }

// Origin says which layer of the composed ruleset a rule came from. It is
// written into `decidedBy.origin` for rule decisions.
type Origin string

// The layers, lowest precedence first except Yolo (a rewrite of asks in any
// layer) and Builtin (the self-approval guard, above everything).
const (
	// OriginDefault is permission["*"], the action when nothing else matches.
	OriginDefault Origin = "default"
	// OriginGlobal is a rule from the config file's top-level permission.
	OriginGlobal Origin = "global"
	// OriginAgent is a rule from agents.<name>.permission.
	OriginAgent Origin = "agent"
	// OriginSession is a whole-session grant recorded at the broker.
	OriginSession Origin = "session"
	// OriginYolo is an ask that yolo mode turned into an allow.
	OriginYolo Origin = "yolo"
	// OriginBuiltin is courier's own rule, the self-approval guard.
	OriginBuiltin Origin = "builtin"
)

// parseAction reads an action string; ok is false for anything else.
func parseAction(s string) (Action, bool) {
	a := Action(s)
	return a, a.Valid()
}

// String implements fmt.Stringer for error messages.
func (a Action) String() string {
	if a.Valid() {
		return string(a)
	}
	return fmt.Sprintf("Action(%q)", string(a))
}
