package prompt

import (
	"bytes"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/seed6639df8c/courier/decision"
	"github.com/seed6639df8c/courier/rules"
	"github.com/seed6639df8c/courier/serve"
	"github.com/seed6639df8c/courier/wire"
)

// heldBound is what 3,000 held asks with 1 MiB payloads may keep in use:
// generous (the prompt keeps about 10 KiB of each), but a prompt that
// kept the payloads would need 3,000 MiB.
const heldBound = 64 << 20

// The attack: 3,000 asks held with 1 MiB payloads took the broker to
// 3.94 GB. The prompt keeps only what the screen shows of each: holding
// them retains a few KiB per ask, not their payloads.
func TestHeldAsksKeepOnlyTheView(t *testing.T) {
	n, bound := 3000, int64(heldBound)
	if raceDetector {
		// The same per ask, on fewer: the race detector makes each
		// megabyte a hundred times slower to read.
		n, bound = 200, heldBound*200/3000
	}
	p := start(blankTTY{closed: make(chan struct{})}, Options{Session: "parent", ArmDelay: -1})
	defer p.Close()
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for i := range n {
		hold1MiB(p, i)
	}
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&after)
	retained := int64(after.HeapAlloc) - int64(before.HeapAlloc)
	t.Logf("%d held asks with 1 MiB payloads retain %.1f MiB of heap (%.1f KiB per ask)",
		n, float64(retained)/(1<<20), float64(retained)/float64(n)/1024)
	if retained > bound {
		t.Errorf("%d held asks retain %.1f MiB, want under %.1f MiB", n, float64(retained)/(1<<20), float64(bound)/(1<<20))
	}
	p.mu.Lock()
	held := p.m.held()
	p.mu.Unlock()
	if held != n {
		t.Errorf("%d asks held, want %d", held, n)
	}
}

// hold1MiB holds an ask whose payload is a fresh megabyte of evidence,
// as a child would send it, and forgets the ask: only the prompt may
// keep any of it.
func hold1MiB(p *Prompt, i int) {
	a := askFrom(fmt.Sprintf("child-%d", i%50), "flood", fmt.Sprintf("make deploy-%d", i))
	a.Request.Message = strings.Repeat("m", 64<<10)
	payload := bytes.Repeat([]byte("0123456789abcdef"), 1<<16)
	copy(payload, `{"evidence":[{"label":"log","text":"`)
	copy(payload[len(payload)-4:], `"}]}`)
	a.Request.Payload = payload
	p.Hold(&a, func(decision.Decision) {})
}

// BenchmarkHold1MiB is what holding an ask with a 1 MiB payload costs the
// broker's goroutine that hands it over: the view, and one walk of the
// payload for its evidence.
func BenchmarkHold1MiB(b *testing.B) {
	a := askFrom("child-1", "flood", "make deploy")
	payload := bytes.Repeat([]byte("0123456789abcdef"), 1<<16)
	copy(payload, `{"evidence":[{"label":"log","text":"`)
	copy(payload[len(payload)-4:], `"}]}`)
	a.Request.Payload = payload
	b.SetBytes(int64(len(payload)))
	for b.Loop() {
		hold(&a, "", nil)
	}
}

// smallAskBound is what one small held ask of a flood may keep in use:
// its entry, its view and its own strings (its id, its value). Its
// requester's texts (agent, session, cwd, the rule that asked) are shared
// with the requester's other asks, and its fields are made only when it
// is drawn. Measured: 465 bytes per ask; 2,058 before the fields
// were made when drawn and the texts shared.
const smallAskBound = 1 << 10

// 10,000 held asks took the broker to 120–141 MiB where the goal is 64:
// each view kept its fields, grown by append (a field is 152 bytes), and
// its own copy of every line its requester's asks all repeat. A flood's
// small asks now cost the prompt well under a kilobyte each.
func TestSmallHeldAsksCostLittle(t *testing.T) {
	const n = 5000
	p := start(blankTTY{closed: make(chan struct{})}, Options{Session: "parent", ArmDelay: -1})
	defer p.Close()
	done := func(decision.Decision) {}
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for i := range n {
		// Made here and forgotten: only the prompt may keep any of it.
		a := smallAsk(i)
		p.Hold(&a, done)
	}
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&after)
	per := (int64(after.HeapAlloc) - int64(before.HeapAlloc)) / n
	t.Logf("%d small held asks retain %d bytes each", n, per)
	if per > smallAskBound {
		t.Errorf("a small held ask retains %d bytes, want at most %d", per, smallAskBound)
	}
}

// smallAsk is a flood's i-th ask as the broker decodes it: every string
// a copy of its own, as the decoder makes them, and the rule that asked.
func smallAsk(i int) serve.Ask {
	own := func(s string) string { return strings.Clone(s) }
	value := fmt.Sprintf("make deploy-%d", i)
	a := serve.Ask{Request: wire.Request{
		ID: fmt.Sprintf("perm-%08d-0000-4000-8000-000000000000", i), RequesterAgentName: own("flood"),
		RequesterSessionID: own("child-flood"), TargetSessionID: own("parent"), Surface: own("bash"), Value: value,
		AccessIntent: &wire.AccessIntent{
			Surface: own("bash"), MatchValues: []string{value}, RequesterCwd: own("/srv/app/work"),
			Principal: wire.Principal{SessionID: own("child-flood"), AgentName: own("flood")},
		},
	}}
	a.Resolution = rules.Resolution{Action: rules.Ask, Rule: rules.Rule{Surface: own("bash"), Pattern: own("make *"), Action: rules.Ask, Origin: rules.OriginGlobal, At: own("courier.json:12")}}
	return a
}
