// Package denylist is an example authorizer: the operator's regular
// expressions, checked against the child-fixed facts of each ask; a match
// denies with a teaching reason, anything else defers. It never allows,
// like pi's deny-first model judge, so it can only ever tighten.
//
// cmd/courier-authz-denylist serves it as a plugin.
package denylist

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/seed6639df8c/courier/authorizer"
	"github.com/seed6639df8c/courier/plugins/protocol"
)

// Rule is one deny-list entry.
type Rule struct {
	// Pattern is matched against each candidate value (unanchored: anchor
	// it with ^ and $ where that matters).
	Pattern *regexp.Regexp
	// Reason is what the child agent reads. Empty means a generic
	// teaching reason naming the pattern.
	Reason string
	// Surfaces restricts the rule to asks on these surfaces (the gate
	// surface, else the display surface); empty means every surface.
	Surfaces []string
}

// ErrNoRules is returned by New when there is nothing to deny: a deny-list
// plugin without rules is a configuration mistake.
var ErrNoRules = errors.New("denylist: no rules")

// Authorizer denies asks that match a rule. It is safe for concurrent use.
type Authorizer struct {
	rules []Rule
}

// New returns a deny-list of rules, checked in order.
func New(rules []Rule) (*Authorizer, error) {
	if len(rules) == 0 {
		return nil, ErrNoRules
	}
	return &Authorizer{rules: slices.Clone(rules)}, nil
}

// fileRule is a rule in a rules file.
type fileRule struct {
	Pattern  string   `json:"pattern"`
	Reason   string   `json:"reason"`
	Surfaces []string `json:"surfaces"`
}

// ParseRules reads a rules file:
//
//	{"rules": [{"pattern": "^git push .*--force", "reason": "...", "surfaces": ["bash"]}]}
func ParseRules(data []byte) ([]Rule, error) {
	var doc struct {
		Rules []fileRule `json:"rules"`
	}
	dec := json.NewDecoder(strings.NewReader(string(data)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&doc); err != nil {
		return nil, fmt.Errorf("denylist rules: %w", err)
	}
	rules := make([]Rule, 0, len(doc.Rules))
	for i, fr := range doc.Rules {
		re, err := regexp.Compile(fr.Pattern)
		if err != nil {
			return nil, fmt.Errorf("denylist rules[%d].pattern: %w", i, err)
		}
		if fr.Pattern == "" {
			return nil, fmt.Errorf("denylist rules[%d].pattern: empty (it would match everything)", i)
		}
		rules = append(rules, Rule{Pattern: re, Reason: strings.TrimSpace(fr.Reason), Surfaces: fr.Surfaces})
	}
	return rules, nil
}

// Describe names the plugin.
func (a *Authorizer) Describe(context.Context) (protocol.Description, error) {
	return protocol.Description{
		Name:    "courier-authz-denylist",
		Version: "1",
		Summary: fmt.Sprintf("denies asks matching %d operator pattern(s); never allows", len(a.rules)),
	}, nil
}

// Authorize denies when a rule matches a candidate value of the ask, and
// defers otherwise.
func (a *Authorizer) Authorize(_ context.Context, ev authorizer.Evidence) (authorizer.Verdict, error) {
	surface := authorizer.EnvelopeSurface(ev)
	values := Candidates(ev)
	for _, r := range a.rules {
		if len(r.Surfaces) > 0 && !slices.Contains(r.Surfaces, surface) && !slices.Contains(r.Surfaces, ev.Surface) {
			continue
		}
		for _, v := range values {
			if r.Pattern.MatchString(v) {
				return authorizer.Verdict{Kind: authorizer.Deny, Reason: r.reason(v)}, nil
			}
		}
	}
	return authorizer.Verdict{Kind: authorizer.Defer}, nil
}

func (r Rule) reason(value string) string {
	if r.Reason != "" {
		return r.Reason
	}
	if len(value) > 120 {
		value = value[:117] + "..."
	}
	return fmt.Sprintf("The operator's deny-list refuses %q (it matches /%s/). Do not retry it or work around it: choose another approach, or tell the user what you need and why.", value, r.Pattern)
}

// Candidates are the values of an ask a deny-list judges: the child-fixed
// match values, every asking unit's command and the boundary path, then
// the display value. A match in any of them denies.
func Candidates(ev authorizer.Evidence) []string {
	var out []string
	if a := ev.Access; a != nil {
		out = append(out, a.MatchValues...)
		for _, u := range a.AskingUnits {
			out = append(out, u.Command)
		}
		if a.BoundaryValue != nil {
			out = append(out, *a.BoundaryValue)
		}
	}
	if ev.Value != "" {
		out = append(out, ev.Value)
	}
	return out
}
