package reliability

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// natsReconnect: children reach the engine through the fault proxy; while
// their asks wait (the broker frozen), every connection is dropped and
// the proxy holds the reconnects until the broker has published every
// answer. So each child takes its answer from the engine's kept copy
// (direct get after reconnecting), never from its subscription.
func (s *suite) natsReconnect(t *testing.T) {
	n := s.scale(20, 60)
	srv := singleServer(t)
	url := srv.ClientURL()
	proxy := newFaultProxy(t, strings.TrimPrefix(url, "nats://"))
	nc, js := natsConn(t, url)
	watch := watchResponses(t, nc)
	r := s.newRig(t)
	log := filepath.Join(r.base, "review.jsonl")

	b := r.natsBroker(log, "--nats", url, "--nats-local")
	r.natsServing(js, b)
	children, parked := r.parkAsks(b, js, proxy.URL(), "c", n, 60*time.Second)
	before := proxy.Accepted()
	proxy.Stall()
	dropped := proxy.Drop()
	cut := time.Now()
	b.thaw()
	r.waitFor("every answer published while the children are away", func() bool {
		return watch.answered() >= n
	})
	away := time.Since(cut)
	proxy.Resume()
	answers := results(t, children, waitLimit)
	b.stop(t)

	tl := countAnswers(answers)
	twice, missing, repeats := natsOnce(t, tl, watch, log)
	figures(t, "asked", tl.asked, "answered", tl.answered, "lost", len(tl.lost), "twice", len(twice), "republished", repeats,
		"unavailable", tl.unavailable, "connections_dropped", dropped/2, "reconnect_attempts", proxy.Accepted()-before,
		"parked_in", parked.Round(time.Millisecond), "away_for", away.Round(time.Millisecond), "longest_ask", ms(tl.longest))
	check(t, tl, twice, false)
	if len(missing) > 0 {
		t.Errorf("answered asks the broker did not log: %v", missing)
	}
}

// partitionMargin is how long past its --timeout a partitioned child may
// take to exit: its last words to the broker (the gone message, flushed
// for at most a second while the connection looks up) and its exit.
const partitionMargin = 2 * time.Second

// natsPartition: the proxy stalls (nothing passes either way, connections
// stay open). A child that cannot reach the engine at all (a stalled or a
// refused connection), or whose answer is held in the stall, gives up
// "unavailable" within its timeout plus the margin: never allowed, never
// a user's denial. A stall shorter than the timeout costs only time:
// every ask is answered.
func (s *suite) natsPartition(t *testing.T) {
	n := s.scale(10, 40)
	srv := singleServer(t)
	url := srv.ClientURL()
	nc, js := natsConn(t, url)
	watch := watchResponses(t, nc)
	r := s.newRig(t)
	log := filepath.Join(r.base, "review.jsonl")
	b := r.natsBroker(log, "--nats", url, "--nats-local")
	r.natsServing(js, b)

	// overshoot is how long past its timeout each given-up child ended.
	var overshoot []time.Duration
	judge := func(t *testing.T, answers []answer, timeouts []time.Duration) tally {
		t.Helper()
		tl := countAnswers(answers)
		late := map[time.Duration]time.Duration{} // timeout → the worst overshoot past the margin
		for i, a := range answers {
			if a.out.Approved || a.code == 0 {
				t.Errorf("a partitioned child was allowed: %+v", a.out)
			}
			if strings.Contains(a.reason(), "denied") || strings.Contains(a.reason(), "user") {
				t.Errorf("a partitioned child reports a denial: %q", a.reason())
			}
			if gaveUp(a) {
				past := a.took - timeouts[i]
				overshoot = append(overshoot, past)
				if past > partitionMargin {
					late[timeouts[i]] = max(late[timeouts[i]], past)
				}
			}
		}
		for timeout, past := range late {
			t.Errorf("partitioned children with --timeout %s gave up up to %s past it (margin %s), e.g.\n%s",
				timeout, past.Round(time.Millisecond), partitionMargin, answers[slices.Index(timeouts, timeout)].stderr)
		}
		if tl.unavailable != tl.asked {
			t.Errorf("%d of %d partitioned children gave up unavailable; the rest: %v", tl.unavailable, tl.asked, tl.lost)
		}
		return tl
	}
	same := func(d time.Duration) []time.Duration { return slices.Repeat([]time.Duration{d}, n) }
	longest := func() string { return ms(slices.Max(append([]time.Duration{0}, overshoot...))) }

	// Unreachable: the proxy stalls before the children connect (it
	// accepts, and nothing comes back: no INFO). Half the children have
	// a timeout shorter than a connection attempt, half longer.
	t.Run("unreachable", func(t *testing.T) {
		proxy := newFaultProxy(t, strings.TrimPrefix(url, "nats://"))
		proxy.Stall()
		children := make([]*natsChild, n)
		timeouts := make([]time.Duration, n)
		for i := range children {
			timeouts[i] = []time.Duration{3 * time.Second, 6 * time.Second}[i%2]
			children[i] = r.startNATSChild(proxy.URL(), fmt.Sprintf("u%d", i), natsValue(i), timeouts[i])
		}
		tl := judge(t, results(t, children, 6*time.Second+waitLimit), timeouts)
		figures(t, "asked", tl.asked, "answered", tl.answered, "unavailable", tl.unavailable, "lost", len(tl.lost),
			"timeouts", "3s/6s", "longest_past_deadline", longest(), "connections", proxy.Accepted())
	})

	// Refused: nothing listens where the engine should be.
	overshoot = nil
	t.Run("refused", func(t *testing.T) {
		const timeout = 2 * time.Second
		nowhere := fmt.Sprintf("nats://127.0.0.1:%d", freePort(t))
		children := make([]*natsChild, n)
		for i := range children {
			children[i] = r.startNATSChild(nowhere, fmt.Sprintf("r%d", i), natsValue(i), timeout)
		}
		tl := judge(t, results(t, children, timeout+waitLimit), same(timeout))
		figures(t, "asked", tl.asked, "answered", tl.answered, "unavailable", tl.unavailable, "lost", len(tl.lost),
			"timeout", timeout, "longest_past_deadline", longest())
	})

	// Cut off after publishing: the answers are published but held in
	// the stall.
	overshoot = nil
	t.Run("answer_held", func(t *testing.T) {
		proxy := newFaultProxy(t, strings.TrimPrefix(url, "nats://"))
		const timeout = 6 * time.Second
		children, parked := r.parkAsks(b, js, proxy.URL(), "h", n, timeout)
		proxy.Stall()
		seen := watch.answered()
		b.thaw()
		r.waitFor("the held answers published", func() bool {
			return watch.answered() >= seen+n
		})
		tl := judge(t, results(t, children, timeout+waitLimit), same(timeout))
		figures(t, "asked", tl.asked, "answered", tl.answered, "unavailable", tl.unavailable, "lost", len(tl.lost),
			"timeout", timeout, "parked_in", parked.Round(time.Millisecond), "longest_past_deadline", longest())
	})

	// A short stall: shorter than the timeout, so every ask is answered.
	t.Run("short_stall", func(t *testing.T) {
		proxy := newFaultProxy(t, strings.TrimPrefix(url, "nats://"))
		const timeout = 30 * time.Second
		children, parked := r.parkAsks(b, js, proxy.URL(), "s", n, timeout)
		proxy.Stall()
		seen := watch.answered()
		stalled := time.Now()
		b.thaw()
		r.waitFor("the answers published into the stall", func() bool {
			return watch.answered() >= seen+n
		})
		pause(time.Second) // the stall lasts on: a chaos schedule, not a wait for an event
		stall := time.Since(stalled)
		proxy.Resume()
		answers := results(t, children, timeout+waitLimit)
		tl := countAnswers(answers)
		figures(t, "asked", tl.asked, "answered", tl.answered, "unavailable", tl.unavailable, "lost", len(tl.lost),
			"timeout", timeout, "stall", stall.Round(time.Millisecond), "parked_in", parked.Round(time.Millisecond),
			"longest_ask", ms(tl.longest))
		check(t, tl, nil, false)
	})
	b.stop(t)
	twice, repeats := watch.published()
	ev := reviewEvents(t, log)
	terminal := sum(ev["forwarded_permission.approved"]) + sum(ev["forwarded_permission.denied"])
	figures(t, "asked", 4*n, "twice", len(twice), "republished", repeats, "terminal_entries", terminal,
		"withdrawn", sum(ev["forwarded_permission.nats_request_withdrawn"]))
	if len(twice) > 0 {
		t.Errorf("answered twice: %v", twice)
	}
}
