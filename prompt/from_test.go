package prompt

import (
	"reflect"
	"testing"

	"github.com/seed6639df8c/courier/rules"
	"github.com/seed6639df8c/courier/serve"
)

// The "from" line says who asked as far as the broker can vouch for it:
// the uid the kernel gave the request file in the isolation mode, and
// whether the agent name whose overrides apply was only claimed (issue
// 18).
func TestFromLineSaysWhoIsVouchedFor(t *testing.T) {
	tests := []struct {
		name string
		edit func(*serve.Ask)
		want []string
	}{
		{"same uid, no agent overrides", func(*serve.Ask) {}, []string{"'release' · session child-release"}},
		{"same uid, a claimed agent", func(a *serve.Ask) { a.Resolution.AgentTrust = rules.AgentClaimed }, []string{
			"'release' · session child-release",
			"agent 'release' claimed, not vouched (same uid, not a boundary): its overrides apply as written",
		}},
		{"isolation, a uid with a name", func(a *serve.Ask) {
			a.Isolated, a.RequesterUID, a.RequesterUser = true, 61002, "alice"
		}, []string{"'release' · session child-release · uid 61002 (alice)"}},
		{"isolation, not vouched", func(a *serve.Ask) {
			a.Isolated, a.RequesterUID = true, 61003
			a.Resolution.AgentTrust = rules.AgentNotVouched
		}, []string{
			"'release' · session child-release · uid 61003",
			"agent 'release' claimed, not vouched for uid 61003: its overrides can only narrow",
		}},
		{"isolation, vouched", func(a *serve.Ask) {
			a.Isolated, a.RequesterUID, a.RequesterUser = true, 61002, "alice"
			a.Resolution.AgentTrust = rules.AgentVouched
		}, []string{
			"'release' · session child-release · uid 61002 (alice)",
			"agent 'release' vouched for uid 61002 (alice): its overrides apply",
		}},
		{"isolation, a user name that is not text", func(a *serve.Ask) {
			a.Isolated, a.RequesterUID, a.RequesterUser = true, 61002, "al\x1b[2Jice"
		}, []string{"'release' · session child-release · uid 61002 (al\\x1b[2Jice)"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ask := testAsk("release", "git push --force", false)
			tt.edit(&ask)
			v := describe(&ask, nil)
			for _, f := range v.fields() {
				if f.label == "from" {
					if !reflect.DeepEqual(f.lines, tt.want) {
						t.Errorf("from:\n got %q\nwant %q", f.lines, tt.want)
					}
					return
				}
			}
			t.Fatal("no from field")
		})
	}
}
