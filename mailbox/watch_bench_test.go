package mailbox

import (
	"context"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// BenchmarkDropToReady measures a child's drop until the broker's Watcher
// hands out the name, on tmpfs and on disk. The "writer" drop is
// Layout.WriteRequest (temp file, fsync, rename); the "rename" drop times
// only the rename of a file written beforehand, which isolates the
// watcher. ns/op also includes removing the file afterwards; p50-ns and
// p99-ns are the drop-to-ready latency alone, write-p50-ns the drop's own
// share of it. In poll mode each drop waits a random part of the interval
// first (outside the timer), so that drops are not phase-locked to ticks.
//
//	go test -run '^$' -bench BenchmarkDropToReady ./mailbox/
func BenchmarkDropToReady(b *testing.B) {
	filesystems := []struct{ name, base string }{
		{"tmpfs", "/dev/shm"},
		{"disk", os.TempDir()},
	}
	modes := []struct {
		name string
		opts WatchOptions
	}{
		{"fsnotify", WatchOptions{}},
		{"poll-250ms", WatchOptions{Mode: WatchPoll, PollInterval: 250 * time.Millisecond}},
	}
	for _, fs := range filesystems {
		for _, mode := range modes {
			for _, rename := range []bool{false, true} {
				if mode.opts.Mode == WatchPoll && (fs.name != "tmpfs" || rename) {
					continue // the interval dominates; one case shows it
				}
				drop := "writer"
				if rename {
					drop = "rename"
				}
				b.Run(fs.name+"/"+mode.name+"/"+drop, func(b *testing.B) {
					if fi, err := os.Stat(fs.base); err != nil || !fi.IsDir() {
						b.Skipf("no %s", fs.base)
					}
					benchDropToReady(b, fs.base, mode.opts, rename)
				})
			}
		}
	}
}

func benchDropToReady(b *testing.B, base string, opts WatchOptions, rename bool) {
	root, err := os.MkdirTemp(base, "courier-bench-")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { os.RemoveAll(root) })
	l := Layout{Root: root}
	if err := l.EnsureInbox("s"); err != nil {
		b.Fatal(err)
	}
	if err := mkdirAllPrivate(l.TempDir()); err != nil {
		b.Fatal(err)
	}
	dir, _ := l.RequestsDir("s")
	w := NewWatcher(dir, opts)
	ctx, cancel := context.WithCancel(b.Context())
	done := make(chan struct{})
	go func() {
		defer close(done)
		w.Run(ctx)
	}()
	defer func() {
		cancel()
		<-done
	}()

	// The consumer stamps each arrival; the benchmark loop waits for it.
	arrived := make(chan time.Time)
	go func() {
		for range w.Ready() {
			arrived <- time.Now()
		}
	}()
	payload := []byte(`{"id":"x","createdAt":1757000000000,"requesterSessionId":"child","targetSessionId":"s","requesterAgentName":"bench","value":"` + strings.Repeat("x", 400) + `"}`)
	drop := func(i int) (time.Duration, time.Duration) {
		id := "perm-" + strconv.Itoa(i)
		name := id + ".json"
		staged := filepath.Join(l.TempDir(), name)
		if rename {
			if err := os.WriteFile(staged, payload, 0o600); err != nil {
				b.Fatal(err)
			}
		}
		start := time.Now()
		if rename {
			err = os.Rename(staged, filepath.Join(dir, name))
		} else {
			err = l.WriteRequest("s", id, payload)
		}
		written := time.Since(start)
		if err != nil {
			b.Fatal(err)
		}
		var at time.Time
		select {
		case at = <-arrived:
		case <-time.After(10 * time.Second):
			b.Fatal("no ready event")
		}
		if err := os.Remove(filepath.Join(dir, name)); err != nil {
			b.Fatal(err)
		}
		w.Done(name)
		return at.Sub(start), written
	}
	drop(-1) // the watch is armed and the first scan done once this arrives

	total := make([]time.Duration, 0, b.N)
	write := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if opts.Mode == WatchPoll {
			b.StopTimer()
			time.Sleep(rand.N(opts.PollInterval))
			b.StartTimer()
		}
		t, wr := drop(i)
		total = append(total, t)
		write = append(write, wr)
	}
	b.StopTimer()
	b.ReportMetric(float64(percentile(total, 50)), "p50-ns")
	b.ReportMetric(float64(percentile(total, 99)), "p99-ns")
	b.ReportMetric(float64(percentile(write, 50)), "write-p50-ns")
}

func percentile(d []time.Duration, p int) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	return s[min(len(s)-1, len(s)*p/100)]
}
