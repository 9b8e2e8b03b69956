package prompt

import (
	"strings"
	"testing"

	"github.com/seed6639df8c/courier/decision"
	"github.com/seed6639df8c/courier/rules"
	"github.com/seed6639df8c/courier/serve"
	"github.com/seed6639df8c/courier/wire"
)

// Issue 15 §3: a pi 20.x child's ask carries no access facts, and the
// rules are never consulted for it. The prompt says so (serve.NoAccessFacts)
// and what "yes, for this session" does then: this subagent only, no scope
// choice, though the broker admitted grants. The same for an ask matched
// by its display value (legacyBashDisplayMatch): still no access facts. An
// ask with access facts keeps its scope choice.
func TestPi20AskSaysWhy(t *testing.T) {
	grants := []wire.SuggestedGrant{{Surface: "bash", Pattern: "npm *"}}
	pi20 := grantAsk(grants)
	pi20.Request.AccessIntent = nil
	legacy := grantAsk(grants)
	legacy.Request.AccessIntent = nil
	legacy.Resolution = rules.Resolution{Action: rules.Ask, Rule: rules.Rule{
		Surface: "bash", Pattern: "npm *", Action: rules.Ask, Origin: rules.OriginGlobal, At: "config.json:4:7"}}
	tests := []struct {
		name  string
		ask   serve.Ask
		want  []string
		scope bool
	}{
		{"pi 20.x", pi20, []string{"why        no access facts: pi 20.x child: the rules were not consulted", noScope}, false},
		{"matched by its display value", legacy, []string{
			`why        rule bash "npm *" (global, config.json:4:7) says ask`,
			"matched by its display value (legacyBashDisplayMatch): no access facts: pi 20.x child", noScope}, false},
		{"with access facts", grantAsk(grants), []string{"grant      bash: npm *"}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := &machine{}
			m.push(newEntry(tt.ask), t0)
			text := frameText(m.frame(120, 30, "parent", t0))
			for _, w := range tt.want {
				if !strings.Contains(text, w) {
					t.Errorf("the frame lacks %q:\n%s", w, text)
				}
			}
			if says := strings.Contains(text, serve.NoAccessFacts); says == tt.scope {
				t.Errorf("says %q: %v, want %v", serve.NoAccessFacts, says, !tt.scope)
			}
			got := pressAll(m, t0, char('s'))
			if tt.scope {
				if len(got) != 0 || m.stage != stageScope {
					t.Fatalf("s with access facts: %+v, stage %d", got, m.stage)
				}
				return
			}
			if len(got) != 1 || got[0].State != decision.StateApprovedForSession || got[0].Grants != nil {
				t.Errorf("s: %+v, want this subagent only at once", got)
			}
		})
	}
}
