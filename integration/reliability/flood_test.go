package reliability

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// sustainedFlood: one requester writes requests as fast as it can, for
// longer than the broker can keep up with (fast: 2 s; soak: 20 s, past
// the bounds on what the broker queues, decision 0036), while another
// asks once. The other's ask gets its rule's answer; every flood request
// is answered once the flood stops, and decided once (none lost, none
// left, none twice: the review log counts the decisions); and the
// broker's peak RSS grows only with the files waiting in its inbox, not
// with the flood's length: at most 96 MiB plus 1.25 KiB per file at the
// inbox's peak. Before 0036, 20 s of this took the broker to 538 MB with
// 282,000 files waiting (the bound there is 448 MB), and it kept rising.
func (s *suite) sustainedFlood(t *testing.T) {
	floodFor := time.Duration(s.scale(2, 20)) * time.Second
	r := s.newRig(t)
	r.keepInbox()
	// The whole flood in one review log (two entries an ask), for the
	// count of decisions per ask.
	config := strings.Replace(rulesConfig, "{", `{"reviewLogMaxBytes": 2147483647, `, 1)
	if err := os.WriteFile(r.config, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	log := filepath.Join(r.base, "review.jsonl")
	b := r.broker(log)
	r.serving(b)
	requests := r.dir("requests")

	ctx, stopFlood := context.WithTimeout(t.Context(), floodFor)
	defer stopFlood()
	var written atomic.Int64
	var writer sync.WaitGroup
	writer.Go(func() {
		// As writeRequest, which may not fail the test from here.
		for i := 0; ctx.Err() == nil; i++ {
			id := fmt.Sprintf("flood-%07d", i)
			tmp := filepath.Join(r.root, "."+id+".tmp")
			if err := os.WriteFile(tmp, requestJSON(id, askHuman, 0), 0o600); err != nil {
				t.Error(err)
				return
			}
			if err := os.Rename(tmp, filepath.Join(requests, id+".json")); err != nil {
				t.Error(err)
				return
			}
			written.Add(1)
		}
	})

	// The inbox's size, sampled: listing hundreds of thousands of names
	// takes tens of ms, so not too often.
	var peakInbox atomic.Int64
	var sampler sync.WaitGroup
	sampled := make(chan struct{})
	sampler.Go(func() {
		tick := time.NewTicker(200 * time.Millisecond)
		defer tick.Stop()
		for {
			if n := int64(countMail(requests)); n > peakInbox.Load() {
				peakInbox.Store(n)
			}
			select {
			case <-sampled:
				return
			case <-tick.C:
			}
		}
	})

	// The other requester asks once the flood is half way through.
	pause(floodFor / 2)
	legit := r.ask(t.Context(), "legit", askAllow, "--timeout", (floodFor + waitLimit).String())
	writer.Wait()
	// The flood's backlog may be hundreds of thousands of files, each
	// answered in its turn: a deadline of its own, and a look twice a
	// second (a listing of that many takes tens of ms of a core).
	drainStart, drainLimit := time.Now(), 10*floodFor+waitLimit
	for countMail(requests) != 0 {
		if time.Since(drainStart) > drainLimit {
			t.Fatalf("%d of the flood's requests still unanswered %s after it stopped", countMail(requests), drainLimit)
		}
		pause(500 * time.Millisecond)
	}
	drained := time.Since(drainStart)
	close(sampled)
	sampler.Wait()
	hwm := vmHWM(b.pid())
	b.stop(t)

	if !expected(legit) {
		t.Errorf("the other requester's ask during the flood: exit %d %+v %s", legit.code, legit.out, legit.stderr)
	}
	n := int(written.Load())
	responses := r.dir("responses")
	if got := countMail(responses); got != n {
		t.Errorf("%d responses for %d flood requests: some were lost", got, n)
	}
	// A second answer would replace the first file: the log tells.
	var twice []string
	decisions := terminalEntries(t, log)
	for id, c := range decisions {
		if c > 1 {
			twice = append(twice, fmt.Sprintf("%s ×%d", id, c))
		}
	}
	if len(twice) > 0 || len(decisions) != n+1 {
		t.Errorf("%d asks decided for %d asked; decided more than once: %v", len(decisions), n+1, twice[:min(len(twice), 10)])
	}
	for _, i := range []int{0, n / 2, n - 1} {
		data, err := os.ReadFile(filepath.Join(responses, fmt.Sprintf("flood-%07d.json", i)))
		if err != nil || !strings.Contains(string(data), `"approved":false`) {
			t.Errorf("flood request %d: %v %s, want an answer that is no allow", i, err, data)
		}
	}
	peak := int(peakInbox.Load())
	bound := 96<<10 + peak*5/4 // KiB
	if hwm > bound {
		t.Errorf("the broker's peak RSS was %d KiB with at most %d files waiting, want at most %d KiB (96 MiB + 1.25 KiB a file)", hwm, peak, bound)
	}
	figures(t, "flood_s", floodFor.Seconds(), "written", n, "per_s", n/int(floodFor.Seconds()),
		"inbox_peak", peak, "rss_peak_MiB", hwm>>10, "rss_KiB_per_file", kibPerFile(hwm, peak),
		"legit", ms(legit.took), "drain", ms(drained))
}

// kibPerFile is rss KiB over files, one decimal.
func kibPerFile(rss, files int) string {
	if files == 0 {
		return "-"
	}
	return strconv.FormatFloat(float64(rss)/float64(files), 'f', 1, 64)
}
