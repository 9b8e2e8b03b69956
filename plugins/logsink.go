package plugins

import (
	"bytes"
	"encoding/json"
	"io"
	"sync"
	"time"

	"github.com/seed6639df8c/courier/reviewlog"
)

// LogEvent is the review-log event of one line of the plugin host's
// diagnostic log (a plugin's start, retirement or failure, go-plugin's
// messages at Info and above, what a plugin printed), when the broker
// keeps that log in its review log rather than on the operator's terminal
// (see ReviewLogWriter). Details: level, message, link when the line is
// about one, and the line's other fields.
const LogEvent = "authorizer_plugin.log"

// The review-log budget of each link's diagnostic lines: a burst, then one
// line per refill interval. A plugin can print 50 lines a second (the
// output cap); at that rate it would rotate the operator's decisions out of
// a 64 MiB review log within hours. With this budget it writes at most
// 360 lines an hour after its burst.
const (
	logBurst  = 200
	logRefill = 10 * time.Second
)

// ReviewLogWriter is a zerolog destination that writes each diagnostic
// line into log as a LogEvent entry, within a budget per link; lines over
// it are counted and the count is written with the next line that fits.
// A nil log discards everything. Lines that are not JSON objects are
// written as their text. It is safe for concurrent use.
func ReviewLogWriter(log *reviewlog.Log) io.Writer {
	return &reviewLogWriter{log: log, now: time.Now, buckets: make(map[string]*bucket)}
}

type reviewLogWriter struct {
	log *reviewlog.Log
	now func() time.Time

	mu      sync.Mutex
	buckets map[string]*bucket
}

// bucket is one link's budget.
type bucket struct {
	tokens  float64
	last    time.Time
	dropped int
}

// maxBuckets bounds the budget map: link names come from the config, but
// a line without a link has its own key, and nothing else adds keys.
const maxBuckets = 1024

// Write takes one zerolog event (a JSON object and a newline) and always
// succeeds: a diagnostic line must never fail the code that logged it.
func (w *reviewLogWriter) Write(p []byte) (int, error) {
	if w.log == nil {
		return len(p), nil
	}
	details := map[string]any{}
	d := json.NewDecoder(bytes.NewReader(p))
	d.UseNumber()
	if err := d.Decode(&details); err != nil {
		details = map[string]any{"message": string(bytes.TrimSpace(p))}
	}
	// zerolog's time is the review line's own timestamp already.
	delete(details, "time")
	link, _ := details["link"].(string)
	dropped, ok := w.take(link)
	if !ok {
		return len(p), nil
	}
	if dropped > 0 {
		details["droppedBefore"] = dropped
	}
	_ = w.log.Write(LogEvent, details)
	return len(p), nil
}

// take spends one line of link's budget; dropped is how many lines were
// dropped since the last one written.
func (w *reviewLogWriter) take(link string) (dropped int, ok bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	now := w.now()
	b := w.buckets[link]
	if b == nil {
		if len(w.buckets) >= maxBuckets {
			return 0, false
		}
		b = &bucket{tokens: logBurst, last: now}
		w.buckets[link] = b
	}
	b.tokens = min(logBurst, b.tokens+float64(now.Sub(b.last))/float64(logRefill))
	b.last = now
	if b.tokens < 1 {
		b.dropped++
		return 0, false
	}
	b.tokens--
	dropped, b.dropped = b.dropped, 0
	return dropped, true
}
