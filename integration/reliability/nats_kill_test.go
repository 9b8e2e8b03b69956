package reliability

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/seed6639df8c/courier/natsbox"
	"github.com/seed6639df8c/courier/natsembed"
)

// natsBrokerSigkill: asks published while the broker is frozen wait in the
// stream; the broker is SIGKILLed and a new one started on the same
// engine. On the same root (a restart on the same machine) every child
// gets exactly one answer, the new broker's; the review logs hold one
// terminal entry and one published response per ask. On another root (a
// standby on another machine, which must wait for the dead broker's lease
// to lapse) a child may give up meanwhile, but then its ask is withdrawn,
// never decided for nobody; every other ask is answered once.
func (s *suite) natsBrokerSigkill(t *testing.T) {
	t.Run("same_root", func(t *testing.T) { s.natsSigkill(t, false) })
	t.Run("other_root", func(t *testing.T) { s.natsSigkill(t, true) })
}

func (s *suite) natsSigkill(t *testing.T, otherRoot bool) {
	n := s.scale(40, 120)
	srv := singleServer(t)
	url := srv.ClientURL()
	nc, js := natsConn(t, url)
	watch := watchResponses(t, nc)
	r := s.newRig(t)
	standby := r
	if otherRoot {
		standby = s.newRig(t)
	}
	logA, logB := filepath.Join(r.base, "review-a.jsonl"), filepath.Join(standby.base, "review-b.jsonl")

	a := r.natsBroker(logA, "--nats", url, "--nats-local")
	r.natsServing(js, a)
	children, parked := r.parkAsks(a, js, url, "k", n, 60*time.Second)
	a.kill()
	killed := time.Now()
	b, refused := standby.natsTakeover(js, logB, "--nats", url, "--nats-local")
	takeover := time.Since(killed)
	answers := results(t, children, waitLimit)
	// The new broker takes every ask out of the stream: answered, or
	// withdrawn for a child that gave up.
	standby.waitFor("the request stream and the inbox empty", func() bool {
		return streamMsgs(t.Context(), js, requestStream) == 0 && countMail(standby.dir("requests")) == 0
	})
	b.stop(t)

	tl := countAnswers(answers)
	twice, missing, repeats := natsOnce(t, tl, watch, logA, logB)
	ev := reviewEvents(t, logA, logB)
	terminal := sum(ev["forwarded_permission.approved"]) + sum(ev["forwarded_permission.denied"])
	published := sum(ev["forwarded_permission.nats_response_published"])
	// Asks decided for children that had given up already: nobody waits
	// for these answers (with a human terminal, a prompt nobody needs).
	forGone := 0
	for _, a := range answers {
		if gaveUp(a) && (ev["forwarded_permission.approved"][a.out.RequestID]+ev["forwarded_permission.denied"][a.out.RequestID]) > 0 {
			forGone++
		}
	}
	figures(t, "asked", tl.asked, "answered", tl.answered, "lost", len(tl.lost), "twice", len(twice), "republished", repeats,
		"unavailable", tl.unavailable, "terminal_entries", terminal, "published_entries", published,
		"decided_for_gone_children", forGone, "withdrawn", sum(ev["forwarded_permission.nats_request_withdrawn"]),
		"parked_in", parked.Round(time.Millisecond), "takeover", takeover.Round(time.Millisecond),
		"refused_starts", refused, "longest_ask", ms(tl.longest))
	check(t, tl, twice, otherRoot)
	if len(missing) > 0 {
		t.Errorf("answered asks the brokers did not log: %v", missing)
	}
	if forGone > 0 {
		t.Errorf("%d asks decided after their children gave up (their gone messages reached no broker), e.g. %s", forGone, tl.gaveUpExample)
	}
	if terminal != tl.answered || published != tl.answered {
		t.Errorf("the review logs hold %d terminal and %d published entries for %d answered asks\nbroker b: %s", terminal, published, tl.answered, b.stderr)
	}
}

// natsTakeover starts a broker on the session a killed one served, and
// starts it again, as a supervisor would (once a second), while it
// refuses because the engine's lease still names the dead broker. It
// returns the serving broker and how many starts were refused.
func (r *rig) natsTakeover(js jetstream.JetStream, log string, args ...string) (*process, int) {
	r.t.Helper()
	refused := 0
	deadline := time.Now().Add(waitLimit)
	for {
		b := r.natsBroker(log, args...)
		var alive bool
		r.waitFor("the new broker serving or refusing", func() bool {
			if b.exited() {
				return true
			}
			ctx, cancel := context.WithTimeout(r.t.Context(), 2*time.Second)
			defer cancel()
			s, err := natsbox.ReadServing(ctx, js, "parent", time.Now())
			alive = err == nil && s.Alive && s.Heartbeat.PID == b.pid()
			return alive
		})
		if alive {
			return b, refused
		}
		if !strings.Contains(b.stderr.String(), "lease") || time.Now().After(deadline) {
			r.t.Fatalf("the new broker exited: %v\n%s", b.err, b.stderr)
		}
		if refused == 0 {
			r.t.Logf("the new broker refused (restarting it once a second): %s", strings.TrimSpace(b.stderr.String()))
		}
		refused++
		pause(time.Second) // a supervisor's restart delay
	}
}

// natsServerRestart: the engine (in this process) is shut down and started
// again on the same port and store while the asks wait in its stream and
// the children wait for their answers; the broker, frozen meanwhile, goes
// on. Every ask is answered exactly once.
func (s *suite) natsServerRestart(t *testing.T) {
	n := s.scale(20, 60)
	store := filepath.Join(t.TempDir(), "jetstream")
	opts := natsembed.Options{ServerName: "n1", Host: "127.0.0.1", Port: -1, StoreDir: store}
	srv := embedded(t, opts)
	url := srv.ClientURL()
	opts.Port = portOf(t, url)
	nc, js := natsConn(t, url)
	watch := watchResponses(t, nc)
	r := s.newRig(t)
	log := filepath.Join(r.base, "review.jsonl")

	b := r.natsBroker(log, "--nats", url, "--nats-local")
	r.natsServing(js, b)
	children, parked := r.parkAsks(b, js, url, "k", n, 60*time.Second)
	down := time.Now()
	shutdown(t, srv)
	embedded(t, opts)
	restart := time.Since(down)
	b.thaw()
	answers := results(t, children, waitLimit)
	r.natsServing(js, b) // still the same broker, serving
	b.stop(t)

	tl := countAnswers(answers)
	twice, missing, repeats := natsOnce(t, tl, watch, log)
	figures(t, "asked", tl.asked, "answered", tl.answered, "lost", len(tl.lost), "twice", len(twice), "republished", repeats,
		"unavailable", tl.unavailable, "parked_in", parked.Round(time.Millisecond),
		"server_down_for", restart.Round(time.Millisecond), "longest_ask", ms(tl.longest))
	check(t, tl, twice, false)
	if len(missing) > 0 {
		t.Errorf("answered asks the broker did not log: %v", missing)
	}
}

// natsOnce is the campaigns' "twice": a request id with more than one
// terminal review entry or published-response entry across the logs, or
// a response subject that got two different answers (seen by the test's
// own subscription). missing are answered ids without a terminal entry;
// repeats are the same answer's bytes published again.
func natsOnce(t *testing.T, tl tally, watch *responseWatch, logs ...string) (twice, missing []string, repeats int) {
	t.Helper()
	ev := reviewEvents(t, logs...)
	terminal := map[string]int{}
	for _, event := range []string{"forwarded_permission.approved", "forwarded_permission.denied"} {
		for id, c := range ev[event] {
			terminal[id] += c
		}
	}
	tw, miss := once(terminal, tl.ids)
	twice = append(twice, tw...)
	// A broker killed after it wrote an answer and before it logged the
	// decision leaves none in its log; the next one, publishing that
	// answer, logs what it says was decided (answeredEarlier).
	for _, id := range miss {
		if ev["forwarded_permission.nats_response_published"+answeredEarlier][id] == 0 {
			missing = append(missing, id)
		}
	}
	tw, _ = once(ev["forwarded_permission.nats_response_published"], nil)
	for _, x := range tw {
		twice = append(twice, "published "+x)
	}
	tw, repeats = watch.published()
	twice = append(twice, tw...)
	if len(twice) > 0 {
		t.Logf("twice: %s", fmt.Sprint(twice))
	}
	return twice, missing, repeats
}

// natsBrokerKills: children ask over NATS without pause while the broker
// is SIGKILLed at random moments (bridging a request, before its ack,
// publishing an answer, before the marker is removed) and started again
// on the same engine and root. Every ask is answered exactly once with
// its rule's answer, or given up by its child while no broker served
// (unavailable, allowed here as in broker_kills); no answer differs from
// another on one subject, and no ask is decided twice.
func (s *suite) natsBrokerKills(t *testing.T) {
	kills := s.scale(2, 20)
	workers := s.scale(4, 8)
	maxLife := time.Duration(s.scale(400, 800)) * time.Millisecond
	srv := singleServer(t)
	url := srv.ClientURL()
	nc, js := natsConn(t, url)
	watch := watchResponses(t, nc)
	r := s.newRig(t)

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var (
		mu      sync.Mutex
		answers []answer
		wg      sync.WaitGroup
		asking  = make(chan struct{})
	)
	for w := range workers {
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-asking:
					return
				default:
				}
				a := r.natsAsk(ctx, url, fmt.Sprintf("w%d", w), natsValue(w+i), waitLimit)
				mu.Lock()
				answers = append(answers, a)
				mu.Unlock()
			}
		})
	}
	var logs []string
	refusedStarts := 0
	start := time.Now()
	for k := range kills {
		log := filepath.Join(r.base, fmt.Sprintf("review-%02d.jsonl", k))
		logs = append(logs, log)
		b, refused := r.natsTakeover(js, log, "--nats", url, "--nats-local")
		refusedStarts += refused
		pause(jitter(maxLife))
		b.kill()
	}
	killing := time.Since(start)
	final := filepath.Join(r.base, "review-final.jsonl")
	logs = append(logs, final)
	b, refused := r.natsTakeover(js, final, "--nats", url, "--nats-local")
	refusedStarts += refused
	close(asking)
	wg.Wait()
	r.waitFor("the request stream and the inbox empty", func() bool {
		return streamMsgs(t.Context(), js, requestStream) == 0 && countMail(r.dir("requests")) == 0
	})
	b.stop(t)

	tl := countAnswers(answers)
	twice, missing, repeats := natsOnce(t, tl, watch, logs...)
	ev := reviewEvents(t, logs...)
	forGone := 0
	for _, a := range answers {
		if gaveUp(a) && ev["forwarded_permission.approved"][a.out.RequestID]+ev["forwarded_permission.denied"][a.out.RequestID] > 0 {
			forGone++
		}
	}
	figures(t, "kills", kills, "asked", tl.asked, "answered", tl.answered, "lost", len(tl.lost), "twice", len(twice),
		"republished", repeats, "unavailable", tl.unavailable, "decided_for_gone_children", forGone,
		"refused_starts", refusedStarts, "longest_ask", ms(tl.longest), "killing_for", killing.Round(time.Millisecond))
	check(t, tl, twice, true)
	if len(missing) > 0 {
		t.Errorf("answered asks no broker logged: %v", missing)
	}
}
