package rules

import (
	"errors"
	"os/user"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// trustConfig has a global deny of force-pushes, a global allow of git,
// and an agent "release" whose overrides widen the deny and narrow the
// allow, vouched for uid 61002 only; "nousers" widens the same deny
// without a users list.
const trustConfig = `{
  "permission": {
    "*": "ask",
    "bash": {"*": "ask", "git *": "allow", "git push --force*": "deny"},
    "path_write": {"/etc/*": "deny", "/repo/*": "ask"}
  },
  "agents": {
    "release": {
      "permission": {
        "bash": {"git push --force*": "allow", "git status*": "deny", "make *": "allow"},
        "path_write": {"/repo/*": "allow", "/etc/*": "allow"}
      },
      "users": [61002, "61004"]
    },
    "nousers": {"permission": {"bash": {"git push --force*": "allow"}}},
    "emptyusers": {"permission": {"bash": {"git push --force*": "allow"}}, "users": []}
  }
}`

// TestAgentTrust is issue 18's "a child can claim any agent name, and so
// any agent's allow overrides": in isolation mode an agent's overrides
// widen an answer only for the uids the config vouches them for; for any
// other uid they may only narrow it. Same-uid mode keeps today's answers.
func TestAgentTrust(t *testing.T) {
	p := mustPolicy(t, trustConfig, Options{Protected: []string{mailboxRoot, agentDir}})
	const vouched, stranger = 61002, 61003
	forcePush := []string{"git push --force origin main"}
	tests := []struct {
		name   string
		q      Query
		action Action
		origin Origin
		trust  AgentTrust
		// units are the per-unit actions, when the answer has units.
		units []Action
	}{
		// The attack: an unvouched uid claims the agent whose override
		// allows what the global rules deny.
		{"unvouched widening is refused", Query{Surface: "bash", MatchValues: forcePush, Agent: "release", Isolated: true, UID: stranger},
			Deny, OriginGlobal, AgentNotVouched, nil},
		{"agent without users vouches for no one", Query{Surface: "bash", MatchValues: forcePush, Agent: "nousers", Isolated: true, UID: vouched},
			Deny, OriginGlobal, AgentNotVouched, nil},
		{"empty users vouches for no one", Query{Surface: "bash", MatchValues: forcePush, Agent: "emptyusers", Isolated: true, UID: vouched},
			Deny, OriginGlobal, AgentNotVouched, nil},
		{"uid 0 is not vouched unless listed", Query{Surface: "bash", MatchValues: forcePush, Agent: "release", Isolated: true, UID: 0},
			Deny, OriginGlobal, AgentNotVouched, nil},
		{"unvouched allow over a global ask asks", Query{Surface: "bash", MatchValues: []string{"make deploy"}, Agent: "release", Isolated: true, UID: stranger},
			Ask, OriginGlobal, AgentNotVouched, nil},
		{"unvouched path allow over a global ask asks", Query{Surface: "path_write", MatchValues: []string{"/repo/a.go"}, BoundaryValue: ptr("/repo/a.go"), Agent: "release", Isolated: true, UID: stranger},
			Ask, OriginGlobal, AgentNotVouched, nil},
		{"unvouched path allow over a global deny denies", Query{Surface: "path_write", MatchValues: []string{"/etc/cron.d/x"}, BoundaryValue: ptr("/etc/cron.d/x"), Agent: "release", Isolated: true, UID: stranger},
			Deny, OriginGlobal, AgentNotVouched, nil},
		{"unvouched asking unit is judged both ways", Query{Surface: "bash", MatchValues: []string{"x"}, AskingUnits: []AskingUnit{{Command: "git push --force"}}, Agent: "release", Isolated: true, UID: stranger},
			Deny, OriginGlobal, AgentNotVouched, nil},
		// Narrowing still works for anyone.
		{"unvouched deny over a global allow denies", Query{Surface: "bash", MatchValues: []string{"git status"}, Agent: "release", Isolated: true, UID: stranger},
			Deny, OriginAgent, AgentNotVouched, nil},
		{"unvouched, neither widened nor narrowed", Query{Surface: "bash", MatchValues: []string{"git log"}, Agent: "release", Isolated: true, UID: stranger},
			Allow, OriginGlobal, AgentNotVouched, nil},
		// Each unit of a line is the stricter of its two answers.
		{"unvouched units", Query{Surface: "bash", MatchValues: []string{"git log && make test && git push --force"}, Agent: "release", Isolated: true, UID: stranger},
			Deny, OriginGlobal, AgentNotVouched, []Action{Allow, Ask, Deny}},
		{"vouched units", Query{Surface: "bash", MatchValues: []string{"git log && make test && git push --force"}, Agent: "release", Isolated: true, UID: vouched},
			Allow, OriginGlobal, AgentVouched, []Action{Allow, Allow, Allow}},
		// Vouched uids, given as a number or a string of digits.
		{"vouched uid", Query{Surface: "bash", MatchValues: forcePush, Agent: "release", Isolated: true, UID: vouched},
			Allow, OriginAgent, AgentVouched, nil},
		{"vouched uid written as a string", Query{Surface: "bash", MatchValues: forcePush, Agent: "release", Isolated: true, UID: 61004},
			Allow, OriginAgent, AgentVouched, nil},
		{"vouched deny still denies", Query{Surface: "bash", MatchValues: []string{"git status"}, Agent: "release", Isolated: true, UID: vouched},
			Deny, OriginAgent, AgentVouched, nil},
		// Same-uid mode: the claim applies, as before issue 18.
		{"same-uid claim applies", Query{Surface: "bash", MatchValues: forcePush, Agent: "release", UID: stranger},
			Allow, OriginAgent, AgentClaimed, nil},
		{"same-uid claim of an agent without users", Query{Surface: "bash", MatchValues: forcePush, Agent: "nousers"},
			Allow, OriginAgent, AgentClaimed, nil},
		// No overrides: nothing to vouch for.
		{"no agent", Query{Surface: "bash", MatchValues: forcePush, Isolated: true, UID: stranger},
			Deny, OriginGlobal, AgentNoOverrides, nil},
		{"unknown agent", Query{Surface: "bash", MatchValues: forcePush, Agent: "ghost", Isolated: true, UID: vouched},
			Deny, OriginGlobal, AgentNoOverrides, nil},
		{"no surface", Query{Agent: "release", Isolated: true, UID: stranger},
			Ask, "", AgentNotVouched, nil},
		{"guard", Query{Surface: "path_write", MatchValues: []string{mailboxRoot + "/x"}, Agent: "release", Isolated: true, UID: vouched},
			Deny, OriginBuiltin, AgentVouched, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := p.Resolve(tt.q)
			if d.Action != tt.action || d.Origin != tt.origin || d.AgentTrust != tt.trust {
				t.Errorf("got %s %s, trust %s; want %s by %s, trust %s", d.Action, d.Origin, d.AgentTrust, tt.action, tt.origin, tt.trust)
			}
			var units []Action
			for _, u := range d.Units {
				units = append(units, u.Action)
			}
			if !slices.Equal(units, tt.units) {
				t.Errorf("units %v, want %v", units, tt.units)
			}
			// Explain and Resolve never disagree.
			e := p.Explain(tt.q)
			if e.Action != d.Action {
				t.Errorf("Explain says %s, Resolve %s", e.Action, d.Action)
			}
		})
	}
}

// TestAgentUsersConfig reads agents.<name>.users: names resolve to uids
// when the config is read, digits are uids, anything else is an error
// naming its place and value.
func TestAgentUsersConfig(t *testing.T) {
	me, err := user.Current()
	if err != nil {
		t.Skipf("no current user: %v", err)
	}
	myUID, err := strconv.Atoi(me.Uid)
	if err != nil {
		t.Skipf("uid %q is not a number", me.Uid)
	}
	if _, err := user.Lookup(me.Username); err != nil {
		t.Skipf("the current user %q cannot be looked up by name: %v", me.Username, err)
	}
	doc := func(users string) string {
		return `{"permission": {}, "agents": {"a": {"permission": {}, "users": ` + users + `}}}`
	}
	tests := []struct {
		name  string
		doc   string
		users []int
		// errs are the problems, each "path: message" matched as a
		// substring of the diagnostic.
		errs []string
	}{
		{"numbers and digits", doc(`[61002, "61003", 0, 4294967294]`), []int{61002, 61003, 0, 4294967294}, nil},
		{"a name", doc(`[` + strconv.Quote(me.Username) + `]`), []int{myUID}, nil},
		{"empty", doc(`[]`), []int{}, nil},
		{"absent", `{"permission": {}, "agents": {"a": {"permission": {}}}}`, nil, nil},
		{"unknown name", doc(`[61002, "courier-no-such-user-7f3a"]`), nil,
			[]string{`c.json:1:72: agents.a.users[1]: unknown user "courier-no-such-user-7f3a": no such user`}},
		{"a string", doc(`"alice"`), nil, []string{`c.json:1:64: agents.a.users: expected an array of user names or numeric uids, such as ["alice", 61002], got "alice"`}},
		{"an object", doc(`{"alice": 1}`), nil, []string{`agents.a.users: expected an array of user names or numeric uids, such as ["alice", 61002], got an object`}},
		{"null", doc(`null`), nil, []string{`agents.a.users: expected an array of user names or numeric uids, such as ["alice", 61002], got null`}},
		{"bad entries", doc(`[true, null, {}, [1], 1.5, -1, 4294967295, "", "99999999999", 1e3]`), nil, []string{
			`agents.a.users[0]: expected an array of user names or numeric uids, such as ["alice", 61002], got true`,
			`agents.a.users[1]: expected an array of user names or numeric uids, such as ["alice", 61002], got null`,
			`agents.a.users[2]: expected an array of user names or numeric uids, such as ["alice", 61002], got an object`,
			`agents.a.users[3]: expected an array of user names or numeric uids, such as ["alice", 61002], got an array`,
			`agents.a.users[4]: expected a uid, an integer from 0 to 4294967294, got 1.5`,
			`agents.a.users[5]: expected a uid, an integer from 0 to 4294967294, got -1`,
			`agents.a.users[6]: expected a uid, an integer from 0 to 4294967294, got 4294967295`,
			`agents.a.users[7]: empty user name`,
			`agents.a.users[8]: expected a uid, an integer from 0 to 4294967294, got "99999999999"`,
		}},
		{"misspelt key", `{"permission": {}, "agents": {"a": {"permission": {}, "user": [1]}}}`, nil,
			[]string{`agents.a.user: unknown key: did you mean "users"? (an agent entry reads permission and users)`}},
		{"repeated key", `{"permission": {}, "agents": {"a": {"users": [1], "Users": [2]}}}`, nil,
			[]string{`agents.a: duplicate key "Users"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := Parse("c.json", []byte(tt.doc))
			if tt.errs == nil {
				if err != nil {
					t.Fatal(err)
				}
				got, ok := cfg.AgentUsers["a"]
				if ok != (tt.users != nil) || !slices.Equal(got, tt.users) {
					t.Errorf("users %v (present %v), want %v", got, ok, tt.users)
				}
				return
			}
			var ce *ConfigError
			if !errors.As(err, &ce) || !errors.Is(err, ErrInvalidConfig) {
				t.Fatalf("error %v, want a *ConfigError", err)
			}
			got := diagStrings(ce.Problems)
			if len(got) != len(tt.errs) {
				t.Fatalf("problems:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tt.errs, "\n"))
			}
			for i, want := range tt.errs {
				if !strings.Contains(got[i], want) {
					t.Errorf("problem %d:\n%s\nwant it to contain:\n%s", i, got[i], want)
				}
			}
		})
	}
}

// A vouched name resolves to the uid it has when the config is read.
func TestAgentUsersByName(t *testing.T) {
	me, err := user.Current()
	if err != nil {
		t.Skipf("no current user: %v", err)
	}
	if _, err := user.Lookup(me.Username); err != nil {
		t.Skipf("the current user %q cannot be looked up by name: %v", me.Username, err)
	}
	uid, _ := strconv.Atoi(me.Uid)
	doc := `{"permission": {"bash": {"git push --force*": "deny"}},
	  "agents": {"r": {"permission": {"bash": {"git push --force*": "allow"}}, "users": [` + strconv.Quote(me.Username) + `]}}}`
	p := mustPolicy(t, doc, Options{})
	q := Query{Surface: "bash", MatchValues: []string{"git push --force"}, Agent: "r", Isolated: true, UID: uid}
	if d := p.Resolve(q); d.Action != Allow || d.AgentTrust != AgentVouched {
		t.Errorf("uid %d of %s: %s, %s; want allow, vouched", uid, me.Username, d.Action, d.AgentTrust)
	}
	q.UID = uid + 1
	if d := p.Resolve(q); d.Action != Deny || d.AgentTrust != AgentNotVouched {
		t.Errorf("uid %d: %s, %s; want deny, not vouched", q.UID, d.Action, d.AgentTrust)
	}
}
