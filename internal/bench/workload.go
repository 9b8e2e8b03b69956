package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/seed6639df8c/courier/decision"
	"github.com/seed6639df8c/courier/forward"
	"github.com/seed6639df8c/courier/mailbox"
	"github.com/seed6639df8c/courier/provenance"
	"github.com/seed6639df8c/courier/wire"
)

// askTimeout bounds every ask the driver makes: a broker that stops
// answering fails the figure instead of hanging the run. The slowest
// healthy ask (pi's 250 ms polling on both sides, 32 requesters) takes
// well under a second.
const askTimeout = 10 * time.Second

// askKind is one kind of ask and the decision it must get, so that a
// figure is never made of answers that were not the ones measured (a
// fallback to "unavailable" is fast too).
type askKind struct {
	Name    string
	Surface string
	Value   string
	Expect  func(decision.Decision) error
}

var (
	// ruleAsk is allowed by the default rules (`git status *`).
	ruleAsk = askKind{Name: "rule", Surface: "bash", Value: "git status --short", Expect: expectDecider(true, provenance.KindRule, "")}
	// pluginAsk is left to ask by the default rules; the read-only link
	// allows it.
	pluginAsk = askKind{Name: "plugin", Surface: "bash", Value: "cat README.md", Expect: expectDecider(true, provenance.KindAuthorizer, pluginLinkName)}
	// shadowAsk passes a shadow link and reaches the headless terminal.
	shadowAsk = askKind{Name: "shadow", Surface: "bash", Value: "cat README.md", Expect: expectDecider(false, provenance.KindUnavailable, "")}
	// noParseAsk is rule-resolved without the bash parser on either side:
	// its surface is a tool's, allowed by writeBenchConfig. Beside ruleAsk it
	// shows what splitting a command line into units costs.
	noParseAsk = askKind{Name: "rule-noparse", Surface: "webfetch", Value: "https://example.com/status", Expect: expectDecider(true, provenance.KindRule, "")}
	// compoundAsk is three commands, each allowed by the default rules.
	compoundAsk = askKind{Name: "rule-compound", Surface: "bash", Value: "git status --short && git diff --stat | ls; git log --oneline -n 5", Expect: expectDecider(true, provenance.KindRule, "")}
	// heldAsk reaches the terminal, where nobody answers it.
	heldAsk = askKind{Name: "held", Surface: "bash", Value: "make deploy"}
)

const pluginLinkName = "ro"

func expectDecider(approved bool, kind provenance.Kind, name string) func(decision.Decision) error {
	return func(d decision.Decision) error {
		inner := provenance.Effective(d.DecidedBy)
		switch {
		case inner == nil:
			return fmt.Errorf("decided by nobody recorded (state %s, %q)", d.State, d.DenialReason)
		case d.Approved() != approved || inner.Kind() != kind:
			return fmt.Errorf("got %s by %s (%q), want approved=%v by %s", d.State, inner.Kind(), d.DenialReason, approved, kind)
		}
		if a, ok := inner.(provenance.Authorizer); ok && name != "" && a.Name != name {
			return fmt.Errorf("decided by link %q, want %q", a.Name, name)
		}
		return nil
	}
}

// driver makes asks against one broker with the child library, as many
// requesters (goroutines, each its own child session) at once.
type driver struct {
	layout mailbox.Layout
	target string
	watch  mailbox.WatchOptions
	// fallbacks counts answers awaited by polling because inotify could
	// not be armed (the per-user instance limit is shared with every
	// other process of this user): such asks are slow for a reason that
	// is not courier's, and the report says how many there were.
	fallbacks atomic.Int64
}

func newDriver(root, target string, watch mailbox.WatchOptions) *driver {
	d := &driver{layout: mailbox.Layout{Root: root}, target: target}
	watch.OnError = func(error) { d.fallbacks.Add(1) }
	d.watch = watch
	return d
}

// client is a Client for the requesters of one run, which share it as the
// subagents of one in-process host would: one watch of the broker's
// responses/ for all of them. The caller closes it when the run ends.
func (d *driver) client() *forward.Client {
	return &forward.Client{Layout: d.layout, Watch: d.watch, Timeout: askTimeout}
}

// ask makes one ask and times it from before the request is built to the
// decision in hand: what a child's gate waits.
func (d *driver) ask(ctx context.Context, c forward.Forwarder, session string, k askKind) (time.Duration, error) {
	id, err := forward.NewRequestID()
	if err != nil {
		return 0, fmt.Errorf("minting a request id: %w", err)
	}
	start := time.Now()
	req, err := forward.Ask{Session: session, Agent: "bench", Surface: k.Surface, Value: k.Value, Cwd: "/work"}.Request(id, d.target, start.UnixMilli())
	if err != nil {
		return 0, fmt.Errorf("building the request: %w", err)
	}
	dec := c.Forward(ctx, req)
	took := time.Since(start)
	if ctx.Err() != nil {
		return took, context.Cause(ctx)
	}
	if k.Expect != nil {
		if err := k.Expect(dec); err != nil {
			return took, fmt.Errorf("%s ask: %w", k.Name, err)
		}
	}
	return took, nil
}

// loadResult is what a closed-loop run measured.
type loadResult struct {
	Requesters int
	Latencies  []time.Duration
	Elapsed    time.Duration
	Failed     int
	FirstErr   error
}

// AsksPerSec is the sustained rate of completed asks.
func (r loadResult) AsksPerSec() float64 { return Rate(len(r.Latencies), r.Elapsed) }

// closedLoop runs requesters that each ask, wait for the answer and ask
// again, each its own child session, all through one Client. Each first
// makes warmup asks (not measured); then all start together and run until
// count asks are done in total (count > 0) or duration has passed
// (duration > 0), whichever comes first: a count gives tmpfs its samples,
// the duration keeps a slow disk within the run's time budget. Elapsed
// runs from that common start to the last answer.
func (d *driver) closedLoop(ctx context.Context, k askKind, requesters, warmup, count int, duration time.Duration) loadResult {
	c := d.client()
	defer c.Close()
	return d.closedLoopVia(ctx, c, k, requesters, warmup, count, duration)
}

// closedLoopVia is closedLoop through the forwarder c, which the caller
// owns: the NATS scenario runs the same loop over another transport.
func (d *driver) closedLoopVia(ctx context.Context, c forward.Forwarder, k askKind, requesters, warmup, count int, duration time.Duration) loadResult {
	res := loadResult{Requesters: requesters}
	var (
		mu       sync.Mutex
		warmed   sync.WaitGroup
		finished sync.WaitGroup
		gate     = make(chan struct{})
		budget   atomic.Int64
	)
	budget.Store(int64(count))
	record := func(lat time.Duration, err error) {
		mu.Lock()
		defer mu.Unlock()
		if err != nil {
			res.Failed++
			if res.FirstErr == nil {
				res.FirstErr = err
			}
			return
		}
		res.Latencies = append(res.Latencies, lat)
	}
	var deadline time.Time
	warmed.Add(requesters)
	finished.Add(requesters)
	for i := range requesters {
		session := "bench-" + k.Name + "-" + strconv.Itoa(i)
		go func() {
			defer finished.Done()
			// A requester stops at its first wrong answer: the figure is
			// failed anyway, and a broker that does not answer would
			// otherwise cost askTimeout per remaining ask.
			failed := false
			for range warmup {
				if _, err := d.ask(ctx, c, session, k); err != nil && ctx.Err() == nil {
					record(0, fmt.Errorf("warm-up: %w", err))
					failed = true
					break
				}
			}
			warmed.Done()
			select {
			case <-gate:
			case <-ctx.Done():
				return
			}
			for !failed && ctx.Err() == nil {
				if duration > 0 && !time.Now().Before(deadline) {
					return
				}
				if count > 0 && budget.Add(-1) < 0 {
					return
				}
				lat, err := d.ask(ctx, c, session, k)
				record(lat, err)
				failed = err != nil
			}
		}()
	}
	warmed.Wait()
	start := time.Now()
	deadline = start.Add(duration) // written before gate is closed: no race
	close(gate)
	finished.Wait()
	res.Elapsed = time.Since(start)
	if err := ctx.Err(); err != nil && res.FirstErr == nil {
		res.FirstErr = context.Cause(ctx)
	}
	return res
}

// Err is the run's failure, if any ask did not get its expected answer.
func (r loadResult) Err() error {
	if r.FirstErr == nil {
		return nil
	}
	return fmt.Errorf("%d asks failed, the first: %w", r.Failed, r.FirstErr)
}

// dropRequests writes n requests of kind k straight into the inbox, the
// way a pi child publishes one (a temp file renamed into requests/),
// without waiting for answers: a backlog, or asks left pending. They are
// written on behalf of this process, so the broker sees a live requester.
func dropRequests(ctx context.Context, layout mailbox.Layout, target string, k askKind, n int) error {
	if err := layout.EnsureInbox(target); err != nil {
		return err
	}
	tmp := layout.TempDir()
	if err := os.MkdirAll(tmp, 0o700); err != nil {
		return fmt.Errorf("dropping requests: %w", err)
	}
	for i := range n {
		if err := ctx.Err(); err != nil {
			return context.Cause(ctx)
		}
		id, err := forward.NewRequestID()
		if err != nil {
			return err
		}
		req, err := forward.Ask{Session: "bench-drop", Agent: "bench", Surface: k.Surface, Value: k.Value, Cwd: "/work"}.Request(id, target, time.Now().UnixMilli())
		if err != nil {
			return fmt.Errorf("dropping request %d: %w", i, err)
		}
		data, err := wire.EncodeRequest(req)
		if err != nil {
			return fmt.Errorf("dropping request %d: %w", i, err)
		}
		dst, err := layout.RequestPath(target, id)
		if err != nil {
			return err
		}
		staged := filepath.Join(tmp, id+".json.tmp")
		if err := os.WriteFile(staged, data, 0o600); err != nil {
			return fmt.Errorf("dropping request %d: %w", i, err)
		}
		if err := os.Rename(staged, dst); err != nil {
			return fmt.Errorf("dropping request %d: %w", i, err)
		}
	}
	return nil
}

var errTimeout = errors.New("timed out")

// interleaved makes count asks of each kind from one requester, the kinds
// in turn (a, b, c, a, b, c…), after warmup rounds, so that the machine's
// drift lands on every kind alike: the differences between their
// latencies are then what the kinds cost, not when they ran. It stops at
// the first wrong answer.
func (d *driver) interleaved(ctx context.Context, kinds []askKind, warmup, count int) []loadResult {
	out := make([]loadResult, len(kinds))
	for i := range out {
		out[i].Requesters = 1
	}
	c := d.client()
	defer c.Close()
	start := time.Now()
	for round := range warmup + count {
		for i, k := range kinds {
			lat, err := d.ask(ctx, c, "bench-interleaved", k)
			if ctx.Err() != nil {
				out[i].FirstErr = context.Cause(ctx)
				return out
			}
			if err != nil {
				out[i].Failed++
				out[i].FirstErr = err
				return out
			}
			if round >= warmup {
				out[i].Latencies = append(out[i].Latencies, lat)
			}
		}
	}
	for i := range out {
		out[i].Elapsed = time.Since(start)
	}
	return out
}
