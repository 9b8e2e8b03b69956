package forward

import (
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/seed6639df8c/courier/mailbox"
)

// BenchmarkForward is the requester's side of an ask, Client.Forward, one
// requester at a time and eight at once sharing one Client, against an
// in-process answerer that works as a broker does: it watches requests/,
// answers each with a bound approval through the mailbox API, then removes
// the request, and keeps a heartbeat fresh. The figures include the
// answerer's work, which is the same on both sides of a comparison. On
// tmpfs when /dev/shm exists, as the end-to-end benchmark's headline is.
// cpu-ns/op is the process's CPU time (user and system) per ask.
//
//	go test -run '^$' -bench BenchmarkForward -benchmem ./forward
//
// pollfirst=1 is one requester whose Client looks for its answers first
// (PollFirst, as a child process's does) and arms no watch for them.
func BenchmarkForward(b *testing.B) {
	for _, run := range []struct {
		name       string
		requesters int
		pollFirst  time.Duration
	}{{"requesters=1", 1, 0}, {"requesters=8", 8, 0}, {"pollfirst=1", 1, OneShotPollFirst}} {
		requesters := run.requesters
		b.Run(run.name, func(b *testing.B) {
			layout := mailbox.Layout{Root: benchRoot(b)}
			serveAll(b, layout, "parent")
			c := &Client{Layout: layout, Timeout: 10 * time.Second, PollFirst: run.pollFirst}
			b.Cleanup(c.Close)
			ask := func(n int64) {
				id := "perm-bench-" + strconv.FormatInt(n, 10)
				req, err := Ask{Session: "child", Agent: "bench", Surface: "bash", Value: "git status --short", Cwd: "/w"}.Request(id, "parent", 1)
				if err != nil {
					b.Fatal(err)
				}
				if d := c.Forward(b.Context(), req); !d.Approved() {
					b.Fatalf("decision = %+v", d)
				}
			}
			ask(-1) // the inbox and the watch exist before the clock starts
			var next atomic.Int64
			cpu0 := processCPU(b)
			b.ResetTimer()
			var wg sync.WaitGroup
			for range requesters {
				wg.Go(func() {
					for n := next.Add(1); n <= int64(b.N); n = next.Add(1) {
						ask(n)
					}
				})
			}
			wg.Wait()
			b.StopTimer()
			// The machine is shared: CPU time is stretched far less
			// than ns/op by other processes' load.
			b.ReportMetric(float64(processCPU(b)-cpu0)/float64(b.N), "cpu-ns/op")
		})
	}
}

// benchRoot is a fresh mailbox root on tmpfs, or in the test's temporary
// directory where there is no /dev/shm.
func benchRoot(b *testing.B) string {
	b.Helper()
	dir, err := os.MkdirTemp("/dev/shm", "courier-forward-bench-")
	if err != nil {
		return b.TempDir()
	}
	b.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// processCPU is this process's user and system CPU time so far.
func processCPU(b *testing.B) time.Duration {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
