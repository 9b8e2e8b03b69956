package natsbridge

import (
	"strings"
	"testing"

	"github.com/seed6639df8c/courier/provenance"
)

// The subagent's attacks on whole command lines are judged over NATS as
// over the mailbox: the bridge hands serve the child's bytes, and serve
// judges each unit with the built-in rules. A compound line, a newline, a
// command substitution and a padded tail are each denied by a rule; the
// plain command is allowed by its rule, so the test tells a rule's answer
// from nobody's.
func TestLineAttacksOverNATSAreJudgedUnitByUnit(t *testing.T) {
	e := newEnv(t)
	e.startServe()
	e.startBridge(e.newBridge())
	for _, c := range []struct {
		value   string
		allowed bool
	}{
		{"git status", true},
		{"git status && rm -rf ~", false},
		{"git status\nrm -rf ~", false},
		{"echo $(rm -rf /)", false},
		{"git status" + strings.Repeat(" ", 300) + "&& rm -rf ~", false},
	} {
		req, data := request(t, c.value)
		sub := e.listen(owner, req.ID)
		e.ask(owner, req.ID, data)
		resp := decode(t, answer(t, sub), req, data)
		if _, isRule := resp.DecidedBy.(provenance.Rule); resp.Approved != c.allowed || !isRule {
			t.Errorf("%q over NATS: approved %v, decided by %s; want approved %v by a rule", c.value, resp.Approved, provenance.Describe(resp.DecidedBy), c.allowed)
		}
	}
}
