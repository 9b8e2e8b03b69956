package rules

// AgentTrust says whether the broker could vouch for the agent name that
// selects agent overrides (agents.<name>.permission). The name comes from
// the child; in isolation mode the broker also knows the requester's uid
// from the request file's owner, and believes the name only for the uids
// the operator listed in agents.<name>.users.
type AgentTrust string

// The agent trusts.
const (
	// AgentNoOverrides: the query names no agent, or one without an entry
	// in the config, so only the global rules apply and nothing needed
	// vouching.
	AgentNoOverrides AgentTrust = "no-overrides"
	// AgentClaimed: same-uid mode. The agent name is the child's claim,
	// which nothing can check there (that mode is not a boundary, see
	// docs/THREAT-MODEL.md), and its overrides apply as written.
	AgentClaimed AgentTrust = "claimed"
	// AgentVouched: isolation mode, and the requesting uid is in the
	// agent's users: its overrides apply as written.
	AgentVouched AgentTrust = "vouched"
	// AgentNotVouched: isolation mode, and the requesting uid is not in
	// the agent's users (or the agent has none): its overrides may make
	// the answer stricter, never wider.
	AgentNotVouched AgentTrust = "not-vouched"
)

// agentTrust classifies q's agent name against the policy.
func (p *Policy) agentTrust(q Query) AgentTrust {
	a, ok := p.agents[q.Agent]
	switch {
	case !ok:
		return AgentNoOverrides
	case !q.Isolated:
		return AgentClaimed
	}
	for _, uid := range a.users {
		if uid == q.UID {
			return AgentVouched
		}
	}
	return AgentNotVouched
}

// agentRules is one configured agent as the policy keeps it.
type agentRules struct {
	// rules are the default, the global rules and the agent's, composed.
	rules []compiledRule
	// users are the uids agents.<name>.users names, resolved.
	users []int
}

// rulesFor returns the ruleset that judges an ask of agent with trust
// and, when the agent's overrides may only narrow the answer, the
// global-only ruleset whose answer the result may not be wider than
// (nil otherwise).
//
// Narrowing takes the stricter of the two answers rather than dropping
// the agent's allows from its ruleset: an agent's rules compose with the
// global ones by "last match wins", so removing its allow rules would
// also let a global rule its wider allow shadowed decide in ways the
// operator never wrote, while the stricter of two answers the operator
// did write is always one of them.
func (p *Policy) rulesFor(agent string, trust AgentTrust) (cfg, narrow []compiledRule) {
	switch trust {
	case AgentClaimed, AgentVouched:
		return p.agents[agent].rules, nil
	case AgentNotVouched:
		return p.agents[agent].rules, p.global
	}
	return p.global, nil
}

// stricter returns the more restrictive of the with-agent answer d and
// the global-only answer g, d on a tie: an unvouched agent's deny still
// reports its own rule, and an answer narrowing did not change reads as
// it would for a vouched agent.
func stricter(d, g Resolution) Resolution {
	if g.Action.MoreRestrictive(d.Action) {
		return g
	}
	return d
}
