package prompt

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/seed6639df8c/courier/serve"
)

// askFrom is a bash ask from agent in session (no grants).
func askFrom(session, agent, value string) serve.Ask {
	a := testAsk(agent, value, false)
	a.Request.RequesterSessionID = session
	return a
}

// The attack: 10,000 asks held from one subagent, and a legitimate ask
// from another was not shown within 30 s. Each requester has its own
// place in the queue: the legitimate ask is shown next after the one on
// screen.
func TestFloodThenLegitShownNext(t *testing.T) {
	const flood = 10_000
	m := &machine{}
	for i := range flood {
		m.push(newEntry(askFrom("child-flood", "flood", fmt.Sprintf("curl x/%d", i))), t0)
	}
	legit := newEntry(askFrom("child-legit", "reviewer", "make test"))
	m.push(legit, t0)
	if m.waiting() != flood || m.q.sessions != 2 {
		t.Fatalf("waiting %d from %d sessions", m.waiting(), m.q.sessions)
	}
	if got := pressAll(m, t0, char('n')); len(got) != 1 {
		t.Fatalf("n: %+v", got)
	}
	if m.head() != legit {
		t.Fatalf("after the flood's first, %q is on screen, want the legitimate ask", m.head().view.summary)
	}
	// Then the flood goes on, in its own order.
	pressAll(m, t0, char('y'))
	if got := m.head().view.summary; got != "'flood' curl x/1" {
		t.Errorf("after the legitimate ask: %q", got)
	}
}

// Requesters take turns, in the order they first had asks waiting; a
// requester that has had its turn goes behind those waiting, the ones
// that arrived during its turn included.
func TestRoundRobin(t *testing.T) {
	tests := []struct {
		name string
		// pushed before any answer, then while the i-th ask shown is on
		// screen
		before []string
		later  map[int][]string
		want   string
	}{
		{"one requester is in order", []string{"a1", "a2", "a3"}, nil, "a1 a2 a3"},
		{"two take turns", []string{"a1", "a2", "a3", "b1", "b2"}, nil, "a1 b1 a2 b2 a3"},
		{"three take turns", []string{"a1", "a2", "b1", "c1", "c2", "c3"}, nil, "a1 b1 c1 a2 c2 c3"},
		{"a newcomer goes before the one on screen", []string{"a1", "a2", "a3"}, map[int][]string{1: {"b1"}}, "a1 a2 b1 a3"},
		{"a requester that emptied waits its turn again", []string{"a1", "b1", "b2"}, map[int][]string{1: {"a2"}}, "a1 b1 a2 b2"},
		{"a session cycling ids cannot starve another", []string{"r1", "r2", "r3"}, map[int][]string{0: {"x1"}, 1: {"y1"}, 2: {"z1"}, 3: {"w1"}}, "r1 x1 r2 y1 z1 r3 w1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := &machine{}
			push := func(names []string) {
				for _, n := range names {
					m.push(newEntry(askFrom("child-"+n[:1], n[:1], n)), t0)
				}
			}
			push(tt.before)
			var order []string
			for i := 0; m.head() != nil; i++ {
				order = append(order, strings.TrimPrefix(m.head().view.summary, fmt.Sprintf("'%s' ", m.head().view.agent)))
				push(tt.later[i])
				pressAll(m, t0, char('y'))
			}
			if got := strings.Join(order, " "); got != tt.want {
				t.Errorf("shown %s, want %s", got, tt.want)
			}
			if m.q.waiting != 0 || m.q.sessions != 0 || len(m.q.byKey) != 0 || m.q.head != nil {
				t.Errorf("the empty queue keeps %+v", m.q)
			}
		})
	}
}

// A requester is its session; without one, its agent name; without that,
// its process.
func TestRequesterOf(t *testing.T) {
	a := askFrom("s1", "alpha", "x")
	b := askFrom("", "alpha", "x")
	c := askFrom("", "", "x")
	c.Request.RequesterPID = 4242
	d := askFrom("", "", "x")
	long := askFrom(strings.Repeat("s", 10_000), "alpha", "x")
	for _, tt := range []struct {
		ask        serve.Ask
		key, label string
	}{
		{a, "session:s1", "session s1"},
		{b, "agent:alpha", "agent 'alpha'"},
		{c, "pid:4242", "process 4242"},
		{d, "unnamed", "an unnamed requester"},
	} {
		if got := requesterOf(&tt.ask.Request, nil); got.key != tt.key || got.label != tt.label {
			t.Errorf("requesterOf = %+v, want %q %q", got, tt.key, tt.label)
		}
	}
	if got := requesterOf(&long.Request, nil); len(got.key) > maxKey || !strings.HasPrefix(got.key, "session#") {
		t.Errorf("a long session id is kept as %d bytes: %.40q", len(got.key), got.key)
	}
}

// Withdrawing asks anywhere in the queue keeps the counts and the turns
// right, and a requester with nothing left is forgotten.
func TestWithdrawFromFairQueue(t *testing.T) {
	m := &machine{}
	rng := rand.New(rand.NewPCG(1, 2))
	var all []*entry
	for i := range 3000 {
		s := fmt.Sprintf("child-%d", i%7)
		e := newEntry(askFrom(s, "agent", fmt.Sprintf("cmd %d", i)))
		all = append(all, e)
		m.push(e, t0)
	}
	rng.Shuffle(len(all), func(i, j int) { all[i], all[j] = all[j], all[i] })
	for i, e := range all {
		if !m.withdraw(e, "gone", t0) {
			t.Fatalf("withdraw %d: not queued", i)
		}
		left := len(all) - i - 1
		if m.held() != left {
			t.Fatalf("after %d withdrawals %d held, want %d", i+1, m.held(), left)
		}
		sessions := map[string]bool{}
		for _, r := range m.q.byKey {
			if r.waiting > 0 {
				sessions[r.key] = true
			}
		}
		if m.q.sessions != len(sessions) {
			t.Fatalf("sessions = %d, want %d", m.q.sessions, len(sessions))
		}
	}
	if m.head() != nil || len(m.q.byKey) != 0 || m.q.head != nil || m.q.tail != nil {
		t.Errorf("the emptied queue keeps %+v, head %v", m.q, m.head())
	}
}

// The header says how many wait, and from how many sessions.
func TestWaitingCount(t *testing.T) {
	m := &machine{}
	m.push(newEntry(askFrom("child-a", "a", "one")), t0)
	if text := frameText(m.frame(100, 30, "parent", t0)); strings.Contains(text, "waiting") {
		t.Errorf("a count with nothing waiting:\n%s", text)
	}
	m.push(newEntry(askFrom("child-a", "a", "two")), t0)
	if text := frameText(m.frame(100, 30, "parent", t0)); !strings.Contains(text, "── 1 more waiting, from 1 session ──") {
		t.Errorf("one waiting:\n%s", text)
	}
	for i := range 3 {
		m.push(newEntry(askFrom(fmt.Sprintf("child-%d", i), "b", "three")), t0)
	}
	if text := frameText(m.frame(100, 30, "parent", t0)); !strings.Contains(text, "── 4 more waiting, from 4 sessions ──") {
		t.Errorf("four waiting:\n%s", text)
	}
}
