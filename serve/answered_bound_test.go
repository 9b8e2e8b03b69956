package serve

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/seed6639df8c/courier/decision"
	"github.com/seed6639df8c/courier/mailbox"
	"github.com/seed6639df8c/courier/wire"
)

// The ids answered are remembered up to a bound (answeredMax), not for
// the whole forwarding timeout: a flood answered for that long kept a
// gigabyte of them. An id forgotten early is still never answered twice:
// its request delivered again is looked for on disk, where its answer is.
func TestAnsweredIDsAreBoundedAndNeverAnsweredTwice(t *testing.T) {
	const bound = 3
	var (
		mu      sync.Mutex
		answers = map[string]int{}
	)
	layout := mailbox.Layout{Root: t.TempDir()}
	f := newFixtureWith(t, layout, Headless{}, func(b *Broker) {
		b.answeredMax = bound
		b.beforeResponse = func(req *wire.Request, _ decision.Decision) {
			mu.Lock()
			answers[req.ID]++
			mu.Unlock()
		}
	})
	var reqs []wire.Request
	var data [][]byte
	for i := range 2 * bound {
		req := request(t, fmt.Sprintf("perm-bound-%d", i), "child", "git status --short")
		reqs, data = append(reqs, req), append(data, publish(t, layout, req))
		path, _ := layout.RequestPath("parent", req.ID)
		waitGone(t, path)
	}
	f.broker.mu.Lock()
	remembered, order := len(f.broker.answered), len(f.broker.answeredOrder)
	f.broker.mu.Unlock()
	if remembered > bound || order > bound {
		t.Errorf("%d answered ids remembered (%d in order), want at most %d", remembered, order, bound)
	}

	// The first request again, its answer not collected: a re-delivery.
	first := reqs[0]
	writeRequest(t, layout, first.ID+".json", data[0])
	path, _ := layout.RequestPath("parent", first.ID)
	waitGone(t, path)
	f.waitSettled(t)
	f.stop()
	mu.Lock()
	defer mu.Unlock()
	if answers[first.ID] != 1 {
		t.Errorf("%s was answered %d times, want once: a forgotten id delivered again was decided again", first.ID, answers[first.ID])
	}
	if resp := collect(t, layout, first, data[0]); !resp.Approved {
		t.Errorf("the first answer: %+v", resp)
	}
}

// An id forgotten early is looked for on disk until its answer, which
// housekeeping removes after the forwarding timeout, is surely gone: a
// request reusing the id in between finds this run's own answer there,
// which is no plant (answeredOver), and is not answered twice. Ids never
// forgotten are not looked for at all.
func TestForgottenIDsAreLookedForOnDiskUntilTheirAnswersAreSwept(t *testing.T) {
	start := time.Unix(1_800_000_000, 0)
	now := start
	b := &Broker{ForwardingTimeout: time.Minute, SweepInterval: time.Second, Now: func() time.Time { return now }}
	b.prepare()
	b.respondedAtStart = map[string]struct{}{}
	if b.mayBeAnsweredOnDisk("perm-early") {
		t.Fatal("nothing was forgotten, yet a request is looked for on disk")
	}
	b.mu.Lock()
	b.answered["perm-early"] = start
	b.answeredOrder = append(b.answeredOrder, answeredAt{"perm-early", start})
	b.forgetOldestAnswered(start)
	b.mu.Unlock()
	interval := housekeepingEvery * time.Second
	for _, tt := range []struct {
		after time.Duration
		want  bool
	}{
		{0, true},
		{time.Minute + interval, true}, // housekeeping on time removes it now
		{time.Minute + 3*interval - time.Millisecond, true},
		{2 * (time.Minute + 3*interval), false}, // the filter's second window
	} {
		now = start.Add(tt.after)
		if got := b.mayBeAnsweredOnDisk("perm-early"); got != tt.want {
			t.Errorf("%s after the id was forgotten: looked for on disk %v, want %v", tt.after, got, tt.want)
		}
		if tt.want && b.mayBeAnsweredOnDisk("perm-never-answered") {
			t.Errorf("%s after an id was forgotten: an id never answered is looked for on disk", tt.after)
		}
	}
}

// Past the bound only a request under an id forgotten early is looked
// for on disk. Every request was, once any id had been: a failed lookup
// under responses/' lock each, about 8 % of a request's handling
// (BenchmarkHandleRuled/log=off/forgetting=on), for the rest of a long
// flood. A plant under a fresh id is then not looked at, and is named as
// a file this broker did not write when the answer replaces it, as
// without the bound (TestResponsePlantedAfterStartIsReported).
func TestOnlyForgottenIDsAreLookedForOnDisk(t *testing.T) {
	const bound = 3
	layout := mailbox.Layout{Root: t.TempDir()}
	var (
		mu      sync.Mutex
		reports []string
	)
	f := newFixtureWith(t, layout, Headless{}, func(b *Broker) {
		b.answeredMax = bound
		b.OnError = func(err error) {
			mu.Lock()
			reports = append(reports, err.Error())
			mu.Unlock()
		}
	})
	for i := range 2 * bound {
		req := request(t, fmt.Sprintf("perm-forgot-%d", i), "child", "git status --short")
		publish(t, layout, req)
		path, _ := layout.RequestPath("parent", req.ID)
		waitGone(t, path)
	}
	f.broker.mu.Lock()
	remembered := len(f.broker.answered)
	f.broker.mu.Unlock()
	if remembered > bound {
		t.Fatalf("%d answered ids remembered, want at most %d: none forgotten", remembered, bound)
	}

	fresh := request(t, "perm-fresh", "child", "git status --short")
	respPath, _ := layout.ResponsePath("parent", fresh.ID)
	if err := unix.Mkfifo(respPath, 0o600); err != nil {
		t.Fatal(err)
	}
	data := publish(t, layout, fresh)
	path, _ := layout.RequestPath("parent", fresh.ID)
	waitGone(t, path)
	if resp := collect(t, layout, fresh, data); !resp.Approved {
		t.Errorf("the fresh request: %+v", resp)
	}
	f.stop()
	mu.Lock()
	defer mu.Unlock()
	over, looked := plantReported(reports, fresh.ID)
	if looked || !over {
		t.Errorf("reports %q: want the plant under a fresh id not looked for (looked: %v) and named when answered over (%v)", reports, looked, over)
	}
}
