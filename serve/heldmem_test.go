package serve

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"sync"
	"testing"
	"time"

	"github.com/seed6639df8c/courier/mailbox"
	"github.com/seed6639df8c/courier/wire"
)

// A held ask keeps only what answering it needs: 3,000 asks whose
// requests carry a payload of about 1 MiB each, held by a terminal that
// keeps nothing of them, leave the broker's heap (after a GC) far below
// what their payloads weigh (about 3 GiB: what main kept). Nothing else
// keeps the file's bytes either, nor did anything on the way: the heap's
// peak while they were read, queued and escalated stays as far below
// (an ask waiting for its turn keeps no payload: escalateJob).
func TestHeldAsksKeepNoPayload(t *testing.T) {
	n := 3000
	switch {
	case testing.Short():
		t.Skip("writes and serves 3 GiB of requests")
	case raceEnabled:
		n = 300 // the same shape; the detector makes the gigabytes slow
	}
	const payload = mailbox.MaxFileSize - 4<<10
	root, err := os.MkdirTemp("/dev/shm", "courier-serve-heldmem-")
	if err != nil {
		root = t.TempDir() // no tmpfs here: slower, the same figure
	} else {
		t.Cleanup(func() { os.RemoveAll(root) })
	}
	layout := mailbox.Layout{Root: root}
	for i := range n {
		// 60 requesting sessions of 50 asks, as many subagents.
		req := request(t, fmt.Sprintf("held-%05d", i), fmt.Sprintf("agent-%d", i/50), "make deploy")
		data, err := wire.EncodeRequest(req)
		if err != nil {
			t.Fatal(err)
		}
		writeRequest(t, layout, req.ID+".json", withPayload(data, payload))
	}
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)

	peak := sampleHeapPeak(t)
	h := &forgetfulHolder{heldOne: make(chan struct{}, 1)}
	f := newFixtureWith(t, layout, h, func(b *Broker) { b.MaxPending, b.MaxPendingPerRequester = -1, -1 })
	deadline := time.After(5 * time.Minute)
	for h.count() < n {
		select {
		case <-h.heldOne:
		case <-deadline:
			t.Fatalf("%d of %d asks reached the terminal", h.count(), n)
		}
	}
	top := peak()
	// Twice: the buffers large files were read into (readBuffers) are
	// kept for reuse until the second collection, not by the held asks.
	runtime.GC()
	runtime.GC()
	var held runtime.MemStats
	runtime.ReadMemStats(&held)
	grew := int64(held.HeapInuse) - int64(before.HeapInuse)
	per := grew / int64(n)
	t.Logf("%d asks of %d KiB held: heap in use grew by %.1f MiB (%d B per held ask; their payloads weigh %.0f MiB)",
		n, payload>>10, float64(grew)/(1<<20), per, float64(n)*payload/(1<<20))
	// A few KiB per ask is the broker's own bookkeeping; a payload kept
	// would be a megabyte each.
	if limit := int64(n) * 16 << 10; grew > limit {
		t.Errorf("the heap grew by %.1f MiB with %d asks held, more than %.1f MiB: payloads are kept", float64(grew)/(1<<20), n, float64(limit)/(1<<20))
	}
	// The peak counts what the GC had not yet collected too: the
	// runtime's pacing (GOGC=100) lets the heap grow to about twice what
	// was live at the last collection before it collects again. What may
	// be live on the way is a few files of a megabyte: those read ahead
	// (maxAheadLarge), and each worker's read and decoded request. A
	// payload kept by every ask waiting for its turn would be a megabyte
	// each, gigabytes in all; 32 MiB of files read ahead (the bound before
	// maxAheadLarge), a fresh buffer for every read and a payload copied
	// at intake peaked at 87-126 MiB above the start.
	peakGrew := int64(top) - int64(before.HeapAlloc)
	t.Logf("peak heap while they were read and escalated: %.1f MiB above the start", float64(peakGrew)/(1<<20))
	if limit := 2 * (int64(n)*4<<10 + 24<<20); peakGrew > limit {
		t.Errorf("the heap peaked %.1f MiB above the start with %d asks of %d KiB, more than %.1f MiB: asks waiting for their turn keep their payloads, or too many files of a megabyte are read ahead", float64(peakGrew)/(1<<20), n, payload>>10, float64(limit)/(1<<20))
	}
	f.stop()
	dir, _ := layout.ResponsesDir("parent")
	if entries, _ := os.ReadDir(dir); len(entries) != n {
		t.Errorf("%d answers at shutdown, want %d", len(entries), n)
	}
	_ = filepath.Join
}

// sampleHeapPeak samples the bytes of heap objects (live, and dead not
// yet swept) every half millisecond until the returned func is called,
// which returns the most seen.
func sampleHeapPeak(t *testing.T) func() uint64 {
	t.Helper()
	samples := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	stop, done := make(chan struct{}), make(chan uint64)
	go func() {
		tick := time.NewTicker(500 * time.Microsecond)
		defer tick.Stop()
		var top uint64
		for {
			metrics.Read(samples)
			if v := samples[0].Value; v.Kind() == metrics.KindUint64 {
				top = max(top, v.Uint64())
			}
			select {
			case <-stop:
				done <- top
				return
			case <-tick.C:
			}
		}
	}()
	var once sync.Once
	var top uint64
	end := func() uint64 {
		once.Do(func() { close(stop); top = <-done })
		return top
	}
	t.Cleanup(func() { end() })
	return end
}

// withPayload adds a "payload" member of about size bytes to an encoded
// request.
func withPayload(data []byte, size int) []byte {
	data = bytes.TrimRight(data, "\n")
	const head, tail = `,"payload":{"blob":"`, `"}}`
	out := append([]byte(nil), data[:len(data)-1]...)
	out = append(out, head...)
	out = append(out, bytes.Repeat([]byte{'x'}, size-len(head)-len(tail))...)
	return append(out, tail...)
}
