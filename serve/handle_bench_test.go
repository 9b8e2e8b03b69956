package serve

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/seed6639df8c/courier/forward"
	"github.com/seed6639df8c/courier/mailbox"
	"github.com/seed6639df8c/courier/reviewlog"
	"github.com/seed6639df8c/courier/rules"
	"github.com/seed6639df8c/courier/wire"
)

// BenchmarkHandleRuled is the broker's hot path: one worker's handle of a
// request the rules decide (git status, allowed), from reading the file to
// the response written, the request removed and the review entries
// written. Writing the request file is outside the clock. The watcher is
// not running: handle only hands names back to it. On tmpfs when /dev/shm
// exists.
//
//	go test -run '^$' -bench BenchmarkHandleRuled -benchmem ./serve
//
// forgetting=on remembers only 16 answered ids (answeredMax), as past the
// bound under a long flood: each request is then checked against the ids
// forgotten early.
func BenchmarkHandleRuled(b *testing.B) {
	for _, c := range []struct {
		logged, forgetting bool
	}{{false, false}, {true, false}, {false, true}} {
		name := "log=off"
		if c.logged {
			name = "log=on"
		}
		if c.forgetting {
			name += "/forgetting=on"
		}
		b.Run(name, func(b *testing.B) {
			layout := mailbox.Layout{Root: benchRoot(b)}
			br := benchBroker(b, layout, c.logged)
			if c.forgetting {
				br.answeredMax = 16
			}
			requests := br.watcher.Dir()
			req, err := forward.Ask{Session: "child", Agent: "bench", Surface: "bash", Value: "git status --short", Cwd: "/w"}.Request("perm-bench", "parent", time.Now().UnixMilli())
			if err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				b.StopTimer()
				r := req
				r.ID = "perm-bench-" + strconv.Itoa(i)
				data, err := wire.EncodeRequest(r)
				if err != nil {
					b.Fatal(err)
				}
				name := r.ID + ".json"
				if err := os.WriteFile(filepath.Join(requests, name), data, 0o600); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				br.handle(ctx, name)
			}
			b.StopTimer()
			if n := len(br.answered); n != min(b.N, br.answeredMax) {
				b.Fatalf("%d answered ids remembered, want %d", n, min(b.N, br.answeredMax))
			}
		})
	}
}

// benchBroker is a Broker made ready to handle requests as Run makes it,
// without Run's goroutines.
func benchBroker(b *testing.B, layout mailbox.Layout, logged bool) *Broker {
	b.Helper()
	cfg, err := rules.Parse("test.json", []byte(testConfig))
	if err != nil {
		b.Fatal(err)
	}
	policy, err := rules.NewPolicy(cfg, rules.Options{Protected: []string{layout.Root}})
	if err != nil {
		b.Fatal(err)
	}
	if err := layout.EnsureInbox("parent"); err != nil {
		b.Fatal(err)
	}
	requests, err := layout.RequestsDir("parent")
	if err != nil {
		b.Fatal(err)
	}
	br := &Broker{
		Layout: layout, Session: "parent", Policy: policy, Terminal: Headless{},
		OnError: func(err error) { b.Fatalf("broker: %v", err) },
	}
	if logged {
		l, err := reviewlog.Open(filepath.Join(layout.Root, "review.log"))
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { l.Close() })
		br.Log = l
	}
	br.prepare()
	br.respondedAtStart = br.responsesAtStart()
	br.watcher = mailbox.NewWatcher(requests, br.watchOptions())
	return br
}

// benchRoot is a fresh mailbox root on tmpfs, or in the benchmark's
// temporary directory where there is no /dev/shm.
func benchRoot(b *testing.B) string {
	b.Helper()
	dir, err := os.MkdirTemp("/dev/shm", "courier-serve-bench-")
	if err != nil {
		return b.TempDir()
	}
	b.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}
