package prompt

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"testing"
	"time"

	"github.com/seed6639df8c/courier/forward"
	"github.com/seed6639df8c/courier/mailbox"
	"github.com/seed6639df8c/courier/reviewlog"
	"github.com/seed6639df8c/courier/rules"
	"github.com/seed6639df8c/courier/serve"
	"github.com/seed6639df8c/courier/wire"
)

// blankTTY is a terminal that takes every frame and never types.
type blankTTY struct{ closed chan struct{} }

func (d blankTTY) Read([]byte) (int, error)  { <-d.closed; return 0, os.ErrClosed }
func (blankTTY) Write(b []byte) (int, error) { return len(b), nil }
func (blankTTY) size() (int, int, error)     { return 120, 40, nil }
func (blankTTY) resized() <-chan os.Signal   { return nil }
func (d blankTTY) close() error              { close(d.closed); return nil }

// BenchmarkHeldAtPrompt is the in-process form of courier-bench's "10,000
// asks held at the terminal": a serve.Broker with the default rules and a
// review log, whose terminal is this prompt (on a terminal nobody types
// at), gets 10,000 asks; the heap and goroutine stacks they keep in use
// are reported per held ask after a full GC, and then how long stopping
// the broker takes (it answers every one "the session ended"). With
// COURIER_HELD_HEAPPROFILE set, the heap profile taken while they are held
// is written to that file (add -memprofilerate 512 for detail). The
// mailbox is in $TMPDIR: /dev/shm for courier-bench's tmpfs figures.
//
//	TMPDIR=/dev/shm go test -run '^$' -bench BenchmarkHeldAtPrompt -benchtime 1x ./prompt/
func BenchmarkHeldAtPrompt(b *testing.B) {
	const n = 10_000
	for b.Loop() {
		benchHeldAtPrompt(b, n)
	}
}

func benchHeldAtPrompt(b *testing.B, n int) {
	dir := b.TempDir()
	layout := mailbox.Layout{Root: filepath.Join(dir, "mail")}
	cfg, err := rules.Load("")
	if err != nil {
		b.Fatal(err)
	}
	policy, err := rules.NewPolicy(cfg, rules.Options{Protected: []string{layout.Root}})
	if err != nil {
		b.Fatal(err)
	}
	log, err := reviewlog.Open(filepath.Join(dir, "review.jsonl"))
	if err != nil {
		b.Fatal(err)
	}
	defer log.Close()
	if err := layout.EnsureInbox("parent"); err != nil {
		b.Fatal(err)
	}
	for range n {
		id, err := forward.NewRequestID()
		if err != nil {
			b.Fatal(err)
		}
		req, err := forward.Ask{Session: "bench-drop", Agent: "bench", Surface: "bash", Value: "make deploy", Cwd: "/work"}.Request(id, "parent", time.Now().UnixMilli())
		if err != nil {
			b.Fatal(err)
		}
		data, err := wire.EncodeRequest(req)
		if err != nil {
			b.Fatal(err)
		}
		if err := layout.WriteRequest("parent", id, data); err != nil {
			b.Fatal(err)
		}
	}
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)

	p := start(blankTTY{closed: make(chan struct{})}, Options{Session: "parent", ArmDelay: -1})
	defer p.Close()
	br := &serve.Broker{Layout: layout, Session: "parent", Policy: policy, Terminal: p, Log: log}
	ctx, cancel := context.WithCancel(b.Context())
	done := make(chan error, 1)
	go func() { done <- br.Run(ctx) }()
	stopped := false
	defer func() {
		if !stopped {
			cancel()
			<-done
		}
	}()
	queued := func() int {
		p.mu.Lock()
		defer p.mu.Unlock()
		return p.m.held()
	}
	deadline := time.Now().Add(2 * time.Minute)
	for queued() < n {
		if time.Now().After(deadline) {
			b.Fatalf("%d of %d asks reached the prompt in 2 minutes", queued(), n)
		}
		time.Sleep(10 * time.Millisecond) // polling a count, not waiting for a result
	}
	runtime.GC()
	runtime.GC()
	var held runtime.MemStats
	runtime.ReadMemStats(&held)
	per := func(after, before uint64) float64 { return float64(int64(after)-int64(before)) / float64(n) }
	b.ReportMetric(per(held.HeapInuse, before.HeapInuse), "heap-B/ask")
	b.ReportMetric(per(held.StackInuse, before.StackInuse), "stack-B/ask")
	b.ReportMetric(float64(runtime.NumGoroutine()), "goroutines")
	if path := os.Getenv("COURIER_HELD_HEAPPROFILE"); path != "" {
		writeHeapProfile(b, path)
	}
	// Stopping answers every held ask "the session ended".
	stopping := time.Now()
	cancel()
	stopped = true
	if err := <-done; err != nil {
		b.Error(err)
	}
	b.ReportMetric(time.Since(stopping).Seconds(), "stop-s")
}

func writeHeapProfile(b *testing.B, path string) {
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
		b.Fatal(err)
	}
}
