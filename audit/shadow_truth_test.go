package audit

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// TestShadowJoinsInterleavedAsks checks the shadow report against the
// truth on generated logs: asks that overlap in time (the broker answers
// several at once), a shadow verdict written before or after its ask's
// decision, decisions by a human or a rule, and ids used again by a later
// ask once the first is answered (as after a broker's restart). Each
// link's table must be exactly the verdicts against the decisions of
// their own asks, and its human counts exactly the human-decided asks.
func TestShadowJoinsInterleavedAsks(t *testing.T) {
	verdicts := []string{"allow", "deny", "defer"}
	for seed := uint64(0); seed < 500; seed++ {
		rng := rand.New(rand.NewPCG(seed, 20))
		type ask struct{ events []string }
		var (
			asks   []*ask
			want   = map[string]*Finals{"allow": {}, "deny": {}, "defer": {}}
			human  int
			differ int
			lines  []string
		)
		flush := func() {
			// Interleave the pending asks, each in its own order.
			for {
				var live []*ask
				for _, a := range asks {
					if len(a.events) > 0 {
						live = append(live, a)
					}
				}
				if len(live) == 0 {
					asks = asks[:0]
					return
				}
				a := live[rng.IntN(len(live))]
				lines = append(lines, a.events[0])
				a.events = a.events[1:]
			}
		}
		n := 1 + rng.IntN(8)
		for i := range n {
			// Ids are distinct among overlapping asks; a flush ends a
			// round, and the next round may use the same ids again.
			if rng.IntN(3) == 0 {
				flush()
			}
			id := fmt.Sprintf("perm-%d", len(asks))
			verdict := verdicts[rng.IntN(3)]
			approved := rng.IntN(2) == 0
			byUser := rng.IntN(2) == 0
			event, decider := "forwarded_permission.denied", `{"kind":"rule","surface":"bash","pattern":"x *","origin":"global"}`
			if approved {
				event = "forwarded_permission.approved"
			}
			if byUser {
				decider = `{"kind":"user","via":"dialog"}`
			}
			resolved := fmt.Sprintf(`{"event":"authorizer_chain_resolved","links":[],"requestId":%q,"shadowLinks":["j"]}`, id)
			shadow := fmt.Sprintf(`{"event":"authorizer_link.shadow","latencyMs":1,"name":"j","reason":null,"requestId":%q,"verdict":%q}`, id, verdict)
			final := fmt.Sprintf(`{"event":%q,"approved":%v,"decidedBy":%s,"requestId":%q,"requestSha256":"d-%d-%d","surface":"bash","value":"cmd"}`, event, approved, decider, id, seed, i)
			a := &ask{events: []string{resolved, shadow, final}}
			if rng.IntN(2) == 0 {
				a.events = []string{resolved, final, shadow}
			}
			asks = append(asks, a)
			if approved {
				want[verdict].Approved++
			} else {
				want[verdict].Denied++
			}
			if byUser && verdict != "defer" {
				human++
				if (verdict == "allow") != approved {
					differ++
				}
			}
		}
		flush()
		log := strings.Join(lines, "\n") + "\n"
		r, err := Shadow(strings.NewReader(log))
		if err != nil || len(r.Links) != 1 || r.RepeatedVerdicts != 0 {
			t.Fatalf("seed %d: %+v, %v\n%s", seed, r, err, log)
		}
		l := r.Links[0]
		if l.Allow != *want["allow"] || l.Deny != *want["deny"] || l.Defer != *want["defer"] || l.HumanDecided != human || l.HumanOtherwise != differ {
			t.Fatalf("seed %d: allow %+v deny %+v defer %+v human %d/%d; want %+v %+v %+v human %d/%d\n%s", seed,
				l.Allow, l.Deny, l.Defer, l.HumanDecided, l.HumanOtherwise, *want["allow"], *want["deny"], *want["defer"], human, differ, log)
		}
	}
}
