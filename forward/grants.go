package forward

import (
	"fmt"
	"time"

	"github.com/seed6639df8c/courier/decision"
	"github.com/seed6639df8c/courier/grants"
	"github.com/seed6639df8c/courier/mailbox"
	"github.com/seed6639df8c/courier/rules"
	"github.com/seed6639df8c/courier/wire"
)

// LocalGrants are a child session's own session grants: what a parent
// answered "yes, for this subagent only" (approved_for_session). They make
// that answer mean something: a later ask of the same child that matches
// one resolves locally, without forwarding, as a session approval.
type LocalGrants struct {
	journal *grants.Journal
	policy  *rules.Policy
}

// childConfig asks for everything: only session grants can allow.
const childConfig = `{"permission": {"*": "ask"}}`

// OpenLocalGrants loads the grants of session from the mailbox's state
// directory. The self-approval guard protects the mailbox here too, so a
// broad grant can never approve writing into it.
func OpenLocalGrants(layout mailbox.Layout, session, home string) (*LocalGrants, error) {
	journal, err := grants.Open(layout, grants.Child, session)
	if err != nil {
		return nil, err
	}
	cfg, err := rules.Parse("child-session-grants", []byte(childConfig))
	if err != nil {
		return nil, fmt.Errorf("child grants: %w", err)
	}
	policy, err := rules.NewPolicy(cfg, rules.Options{Home: home, Protected: []string{layout.Root}})
	if err != nil {
		return nil, fmt.Errorf("child grants: %w", err)
	}
	if err := journal.Load(policy.Sessions()); err != nil {
		return nil, err
	}
	return &LocalGrants{journal: journal, policy: policy}, nil
}

// Resolve answers req from the recorded grants. Only an allow by a session
// grant counts; everything else (including a guard denial) is left to the
// parent, which will apply its own rules.
func (g *LocalGrants) Resolve(req wire.Request) (decision.Decision, bool) {
	if g == nil || req.AccessIntent == nil || g.policy.Sessions().Len() == 0 {
		return decision.Decision{}, false
	}
	d := g.policy.Resolve(rules.QueryFromIntent(req.AccessIntent))
	if d.Action != rules.Allow || d.Origin != rules.OriginSession {
		return decision.Decision{}, false
	}
	return decision.Allow(d.DecidedBy()), true
}

// Record keeps the grants of req when d approved it for this session, at
// the width the parent chose (proven when it said nothing).
func (g *LocalGrants) Record(req wire.Request, d decision.Decision) error {
	if g == nil || d.State != decision.StateApprovedForSession || req.SessionApproval == nil {
		return nil
	}
	width := rules.WidthProven
	if d.SessionGrantWidth == wire.GrantFamily {
		width = rules.WidthFamily
	}
	gs := make([]rules.SessionGrant, len(req.SessionApproval.Grants))
	for i, gr := range req.SessionApproval.Grants {
		gs[i] = rules.SessionGrant{Surface: gr.Surface, Pattern: gr.Pattern}
	}
	if _, err := g.policy.Sessions().Record(width, gs...); err != nil {
		return fmt.Errorf("recording this session's grants: %w", err)
	}
	return g.journal.Save(g.policy.Sessions(), grants.AskedFor(req, d, time.Now()))
}
