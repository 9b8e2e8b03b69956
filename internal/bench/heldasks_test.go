package bench

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/seed6639df8c/courier/decision"
	"github.com/seed6639df8c/courier/mailbox"
	"github.com/seed6639df8c/courier/rules"
	"github.com/seed6639df8c/courier/serve"
)

// blockedTerminal holds every ask until its context ends, as a human who
// never answers, and counts them: a goroutine blocked in Decide per ask.
type blockedTerminal struct{ held atomic.Int64 }

func (h *blockedTerminal) Decide(ctx context.Context, _ serve.Ask) decision.Decision {
	h.held.Add(1)
	<-ctx.Done()
	return decision.NobodyAnswered("stopped")
}

func (h *blockedTerminal) count() int64 { return h.held.Load() }

// queuedTerminal holds every ask the way the tty prompt does (a
// serve.Holder): no goroutine per ask, only the ask and its callback,
// until the broker withdraws it.
type queuedTerminal struct{ held atomic.Int64 }

func (q *queuedTerminal) Decide(context.Context, serve.Ask) decision.Decision {
	panic("the broker holds asks at a Holder")
}

func (q *queuedTerminal) Hold(_ *serve.Ask, done func(decision.Decision)) func(error) {
	q.held.Add(1)
	var once sync.Once
	return func(error) { once.Do(func() { done(decision.NobodyAnswered("stopped")) }) }
}

func (q *queuedTerminal) count() int64 { return q.held.Load() }

// countingTerminal is a terminal that says how many asks it holds.
type countingTerminal interface {
	serve.Terminal
	count() int64
}

// BenchmarkHeldAsks is the in-process counterpart of courier-bench's
// "10,000 asks held at the terminal": a serve.Broker with the default
// rules and a terminal that never answers (shallower than the tty prompt,
// whose own queue and rendering it leaves out) gets 10,000 asks, and the
// heap and goroutine stacks they keep in use are reported per held ask
// after a full GC. It shows what the broker's side of the RSS figure is
// made of, so a change to it shows in heap-B/ask and stack-B/ask. The
// "blocked" terminal keeps a goroutine per ask in Decide; the "queued"
// one is a serve.Holder, as the tty prompt is (see also prompt's
// BenchmarkHeldAtPrompt, the prompt included).
//
//	go test -run '^$' -bench BenchmarkHeldAsks -benchtime 1x ./bench/
func BenchmarkHeldAsks(b *testing.B) {
	const n = 10_000
	for _, bb := range []struct {
		name string
		term func() countingTerminal
	}{
		{"blocked", func() countingTerminal { return &blockedTerminal{} }},
		{"queued", func() countingTerminal { return &queuedTerminal{} }},
	} {
		b.Run(bb.name, func(b *testing.B) {
			for b.Loop() {
				benchHeldAsks(b, n, bb.term())
			}
		})
	}
}

func benchHeldAsks(b *testing.B, n int, term countingTerminal) {
	b.Helper()
	layout := mailbox.Layout{Root: b.TempDir()}
	cfg, err := rules.Load("")
	if err != nil {
		b.Fatal(err)
	}
	policy, err := rules.NewPolicy(cfg, rules.Options{Protected: []string{layout.Root}})
	if err != nil {
		b.Fatal(err)
	}
	if err := dropRequests(b.Context(), layout, "parent", heldAsk, n); err != nil {
		b.Fatal(err)
	}
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)

	// All from one requesting session: the bounds on waiting asks lifted.
	br := &serve.Broker{Layout: layout, Session: "parent", Policy: policy, Terminal: term, MaxPendingPerRequester: -1, MaxPending: -1}
	ctx, cancel := context.WithCancel(b.Context())
	done := make(chan error, 1)
	go func() { done <- br.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			b.Error(err)
		}
	}()
	deadline := time.Now().Add(2 * time.Minute)
	for term.count() < int64(n) {
		if time.Now().After(deadline) {
			b.Fatalf("%d of %d asks reached the terminal in 2 minutes", term.count(), n)
		}
		time.Sleep(10 * time.Millisecond)
	}
	runtime.GC()
	var held runtime.MemStats
	runtime.ReadMemStats(&held)
	per := func(after, before uint64) float64 { return float64(int64(after)-int64(before)) / float64(n) }
	b.ReportMetric(per(held.HeapInuse, before.HeapInuse), "heap-B/ask")
	b.ReportMetric(per(held.StackInuse, before.StackInuse), "stack-B/ask")
	b.ReportMetric(per(held.Sys, before.Sys), "sys-B/ask")
}
