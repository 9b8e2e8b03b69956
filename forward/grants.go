package forward

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
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
	layout  mailbox.Layout
	home    string
	journal *grants.Journal
	// policy holds the grants; nil until there are any (load).
	policy *rules.Policy
}

// childConfig asks for everything: only session grants can allow.
const childConfig = `{"permission": {"*": "ask"}}`

// OpenLocalGrants loads the grants of session from the mailbox's state
// directory. The self-approval guard protects the mailbox here too, so a
// broad grant can never approve writing into it.
//
// In the isolation mode (layout.Isolated) the grants are those the broker
// vouched for this process's uid (grants.OpenChild): the broker's user
// records them before it answers, and the child only reads them, refusing
// a journal another uid owns (its own included: a subagent that wrote
// itself "vouched" grants). The child's own journal, which anyone of its
// uid can write, is not read there at all.
//
// A session without a journal has no grants, the common case: its policy
// is built only when a first grant is recorded, because building it (a
// config parsed, a guard set up) is a tenth of a millisecond of every
// child process's start, on the agent's critical path.
func OpenLocalGrants(layout mailbox.Layout, session, home string) (*LocalGrants, error) {
	journal, err := grants.OpenChild(layout, session)
	if err != nil {
		return nil, err
	}
	g := &LocalGrants{layout: layout, home: home, journal: journal}
	if _, err := os.Lstat(journal.Path()); errors.Is(err, fs.ErrNotExist) {
		return g, nil
	}
	if err := g.load(); err != nil {
		return nil, err
	}
	return g, nil
}

// load builds the policy and loads the journal into it.
func (g *LocalGrants) load() error {
	cfg, err := rules.Parse("child-session-grants", []byte(childConfig))
	if err != nil {
		return fmt.Errorf("child grants: %w", err)
	}
	policy, err := rules.NewPolicy(cfg, rules.Options{Home: g.home, Protected: []string{g.layout.Root}})
	if err != nil {
		return fmt.Errorf("child grants: %w", err)
	}
	if err := g.journal.Load(policy.Sessions()); err != nil {
		return err
	}
	g.policy = policy
	return nil
}

// Resolve answers req from the recorded grants. Only an allow by a session
// grant counts; everything else (including a guard denial) is left to the
// parent, which will apply its own rules.
func (g *LocalGrants) Resolve(req wire.Request) (decision.Decision, bool) {
	if g == nil || g.policy == nil || req.AccessIntent == nil || g.policy.Sessions().Len() == 0 {
		return decision.Decision{}, false
	}
	d := g.policy.Resolve(rules.QueryFromIntent(req.AccessIntent))
	if d.Action != rules.Allow || d.Origin != rules.OriginSession {
		return decision.Decision{}, false
	}
	return decision.Allow(d.DecidedBy()), true
}

// Record keeps the grants of req when d approved it for this session, at
// the width the parent chose (proven when it said nothing). In the
// isolation mode it keeps nothing: the broker recorded them in the
// vouched journal before it answered, and the child may not write there.
func (g *LocalGrants) Record(req wire.Request, d decision.Decision) error {
	if g == nil || g.layout.Isolated() || d.State != decision.StateApprovedForSession || req.SessionApproval == nil {
		return nil
	}
	if g.policy == nil {
		if err := g.load(); err != nil {
			return fmt.Errorf("recording this session's grants: %w", err)
		}
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
