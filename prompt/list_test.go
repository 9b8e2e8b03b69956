package prompt

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/seed6639df8c/courier/decision"
)

// summaries names asks by their summaries, for comparing orders.
func summaries(es []*entry) []string {
	out := make([]string, len(es))
	for i, e := range es {
		out[i] = e.view.summary
	}
	return out
}

// The list shows the waiting asks in the order the prompt would show
// them: checked against answering them one by one, on queues built at
// random (several requesters, asks arriving between answers).
func TestListOrderIsTurnOrder(t *testing.T) {
	for seed := range uint64(200) {
		rng := rand.New(rand.NewPCG(seed, 7))
		listed, answered := &machine{}, &machine{}
		n := 0
		push := func() {
			s := fmt.Sprintf("s%d", rng.IntN(5))
			n++
			for _, m := range []*machine{listed, answered} {
				m.push(newEntry(askFrom(s, "agent-"+s, fmt.Sprintf("cmd %d", n))), t0)
			}
		}
		for range 1 + rng.IntN(20) {
			push()
		}
		// Answer a few first, with arrivals in between, so that the ring
		// is in some later state.
		for range rng.IntN(5) {
			if listed.head() == nil {
				break
			}
			pressAll(listed, t0, char('y'))
			pressAll(answered, t0, char('y'))
			if rng.IntN(2) == 0 {
				push()
			}
		}
		if listed.head() == nil {
			continue
		}
		want := []string{}
		for answered.head() != nil {
			pressAll(answered, t0, char('n'))
			if answered.head() != nil {
				want = append(want, answered.head().view.summary)
			}
		}
		got := summaries(listed.q.inTurn(listed.owner(), 0, listed.waiting()))
		if strings.Join(got, "|") != strings.Join(want, "|") {
			t.Fatalf("seed %d: listed\n%q\nshown\n%q", seed, got, want)
		}
		// A window of the list is the same list, cut.
		if len(got) > 3 {
			if win := summaries(listed.q.inTurn(listed.owner(), 2, 2)); strings.Join(win, "|") != strings.Join(got[2:4], "|") {
				t.Fatalf("seed %d: window %q, want %q", seed, win, got[2:4])
			}
		}
	}
}

// The issue: "3 more waiting" could not be viewed or picked. l lists
// them; the operator moves and picks one, which shows at once; the ask
// that was on screen comes back right after it; the turns of the others
// stay as they were.
func TestListPick(t *testing.T) {
	m := &machine{armDelay: 100 * time.Millisecond}
	m.push(newEntry(askFrom("flood", "Explore", "curl x/0")), t0)
	for i := 1; i < 4; i++ {
		m.push(newEntry(askFrom("flood", "Explore", fmt.Sprintf("curl x/%d", i))), t0)
	}
	m.push(newEntry(askFrom("legit", "reviewer", "make test")), t0)
	m.push(newEntry(askFrom("other", "tester", "npm publish")), t0)
	armed := t0.Add(time.Second)

	pressAll(m, armed, char('l'))
	screen := screenOf(m, 100, 30)
	for _, want := range []string{
		"The 5 asks waiting, from 3 sessions, in the order they come:",
		"  ▸    1  session legit · 'reviewer' make test",
		"       2  session other · 'tester' npm publish",
		"       3  session flood · 'Explore' curl x/1",
		"↑/↓ move · pgdn/pgup a page · enter shows the ask · esc, l or q goes back",
	} {
		if !strings.Contains(screen, want) {
			t.Fatalf("the list lacks %q:\n%s", want, screen)
		}
	}
	// y and n in the list answer nothing.
	if got := pressAll(m, armed, char('y'), char('n'), down); len(got) != 0 {
		t.Fatalf("keys in the list answered: %+v", got)
	}
	pressAll(m, armed, enter)
	if got := m.head().view.summary; got != "'tester' npm publish" {
		t.Fatalf("picked %q", got)
	}
	if !strings.Contains(m.notice, "'Explore' curl x/0 waits again") {
		t.Errorf("notice %q", m.notice)
	}
	// The picked ask arms anew: a key at once counts for nothing.
	if got := pressAll(m, armed, char('y')); len(got) != 0 {
		t.Fatalf("a key as the picked ask appeared answered: %+v", got)
	}
	later := armed.Add(time.Second)
	if got := pressAll(m, later, char('n')); len(got) != 1 || got[0].State != decision.StateDenied {
		t.Fatalf("n on the picked ask: %+v", got)
	}
	// The one that was on screen is back, then the turns go on: legit,
	// then the flood's next.
	order := []string{m.head().view.summary}
	for m.head() != nil {
		pressAll(m, later.Add(time.Hour), char('y'))
		later = later.Add(2 * time.Hour)
		if m.head() != nil {
			order = append(order, m.head().view.summary)
		}
	}
	want := "'Explore' curl x/0|'reviewer' make test|'Explore' curl x/1|'Explore' curl x/2|'Explore' curl x/3"
	if got := strings.Join(order, "|"); got != want {
		t.Errorf("after the pick:\n%s\nwant\n%s", got, want)
	}
}

// Keys of the list: moving stops at its ends, esc and q go back, and a
// list with nothing waiting does not open.
func TestListKeys(t *testing.T) {
	m := &machine{}
	m.push(newEntry(askFrom("a", "alpha", "ls")), t0)
	pressAll(m, t0, char('l'))
	if m.stage != stageChoose || m.notice != "no other ask is waiting" {
		t.Fatalf("l with nothing waiting: stage %d, notice %q", m.stage, m.notice)
	}
	for i := range 3 {
		m.push(newEntry(askFrom("b", "beta", fmt.Sprintf("make %d", i))), t0)
	}
	pressAll(m, t0, char('l'), up, up)
	if m.listAt != 0 {
		t.Errorf("up at the top: %d", m.listAt)
	}
	pressAll(m, t0, down, down, down, down)
	if m.listAt != 2 {
		t.Errorf("down past the end: %d", m.listAt)
	}
	pressAll(m, t0, esc)
	if m.stage != stageChoose {
		t.Errorf("esc left stage %d", m.stage)
	}
	pressAll(m, t0, char('l'), char('q'))
	if m.stage != stageChoose {
		t.Errorf("q left stage %d", m.stage)
	}
	if !strings.Contains(frameText(m.frame(120, 40, "parent", t0)), "l lists the 3 waiting") {
		t.Errorf("the keys do not say l:\n%s", frameText(m.frame(120, 40, "parent", t0)))
	}
}

// 10,000 asks waiting: the list is a window, paged, which says where it
// is; picking deep in it works, and costs no more than walking to it.
func TestListOfAFlood(t *testing.T) {
	m := &machine{}
	for i := range 10_000 {
		m.push(newEntry(askFrom("flood", "Explore", fmt.Sprintf("curl x/%d", i))), t0)
	}
	legit := newEntry(askFrom("legit", "reviewer", "make test"))
	m.push(legit, t0)
	pressAll(m, t0, char('l'))
	text := frameText(m.frame(100, 28, "parent", t0))
	if !strings.Contains(text, "The 10000 asks waiting, from 2 sessions") || !strings.Contains(text, "asks 1–") ||
		!strings.Contains(text, "▸    1  session legit") {
		t.Fatalf("the list of a flood:\n%s", text)
	}
	for range 500 {
		pressAll(m, t0, pgDown)
	}
	text = frameText(m.frame(100, 28, "parent", t0))
	if !strings.Contains(text, "▸10000  session flood · 'Explore' curl x/9999") || !strings.Contains(text, "of 10000") {
		t.Fatalf("the end of the list:\n%s", text)
	}
	pressAll(m, t0, enter)
	if got := m.head().view.summary; got != "'Explore' curl x/9999" {
		t.Fatalf("picked %q", got)
	}
	if m.waiting() != 10_000 {
		t.Errorf("%d waiting after the pick", m.waiting())
	}
}

// The list on screen, as a golden.
func TestListScreen(t *testing.T) {
	m := &machine{}
	m.push(newEntry(askFrom("sub-7f3a", "reviewer", "git push --set-upstream origin feature/checkout")), t0)
	for i := range 3 {
		m.push(newEntry(askFrom("sub-flood", "Explore", fmt.Sprintf("curl -s https://example.com/%d", i))), t0)
	}
	m.push(newEntry(askFrom("sub-9c21", "tester", "npm publish")), t0)
	pressAll(m, t0, char('l'), down)
	golden(t, "list_waiting", screenOf(m, 96, 20))
}
