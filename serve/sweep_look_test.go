package serve

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/seed6639df8c/courier/mailbox"
)

// The sweep finds which requests in flight lost their file. While a
// flood's jobs wait (each on a file in the inbox) and few requests are in
// flight, it looks each one up and never lists the inbox: one held ask
// made every sweep list a flood's tens of thousands of waiting files,
// 50-400 ms a second on the directory's lock (BENCHMARKS.md, "The tty
// flood's extra cost"). Otherwise it lists the inbox once. Either way a
// request whose file is gone is ended as its requester gone, and one whose
// file is there is kept.
func TestSweepLooksUpFewRequestsInACrowdedInbox(t *testing.T) {
	tests := []struct {
		name           string
		inflight, jobs int
		wantLists      int
	}{
		{"one held ask, a flood waiting", 1, 200, 0},
		{"as many as it looks up, a flood waiting", sweepStatMax, sweepLookRatio * sweepStatMax, 0},
		{"more than it looks up", sweepStatMax + 1, 1 << 16, 1},
		{"one held ask, nothing else waiting", 1, 0, 1},
		{"held asks, a few jobs waiting", 64, sweepLookRatio*64 - 1, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			lists := 0
			b := &Broker{
				Layout: mailbox.Layout{Root: t.TempDir()}, Session: "parent",
				inflight: map[string]*pending{},
				watcher:  mailbox.NewWatcher(dir, mailbox.WatchOptions{}),
				fair:     newFairQueue(),
			}
			b.fair.queued = tt.jobs
			b.listInbox = func() ([]string, error) {
				lists++
				return b.watcher.List()
			}
			// A flood's files waiting in the inbox, none of them in flight.
			for i := range 200 {
				touch(t, filepath.Join(dir, "flood-"+strconv.Itoa(i)+".json"))
			}
			ctxs := map[string]context.Context{}
			for i := range tt.inflight {
				id := "req-" + strconv.Itoa(i)
				if i != 0 {
					// The first request's file is gone: its child gave up.
					touch(t, filepath.Join(dir, id+".json"))
				}
				ctx, cancel := context.WithCancelCause(t.Context())
				b.registered++
				b.inflight[id] = &pending{cancel: cancel, name: id + ".json", created: time.Now(), seq: b.registered}
				ctxs[id] = ctx
			}

			b.sweepInflight()

			if lists != tt.wantLists {
				t.Errorf("the sweep listed the inbox %d times, want %d", lists, tt.wantLists)
			}
			if cause := context.Cause(ctxs["req-0"]); !errors.Is(cause, errRequesterGone) {
				t.Errorf("the request whose file is gone: cause %v, want %v", cause, errRequesterGone)
			}
			for id, ctx := range ctxs {
				if id != "req-0" && context.Cause(ctx) != nil {
					t.Fatalf("%s, whose file is there, was ended: %v", id, context.Cause(ctx))
				}
			}
		})
	}
}

func touch(t *testing.T, path string) {
	t.Helper()
	if err := os.WriteFile(path, []byte("{}"), 0o600); err != nil {
		t.Fatal(err)
	}
}
