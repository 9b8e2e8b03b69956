package bench

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/seed6639df8c/courier/forward"
	"github.com/seed6639df8c/courier/mailbox"
	"github.com/seed6639df8c/courier/wire"
)

// floodSession is the requesting session of every flood request: one
// subagent that asks as fast as it can write.
const floodSession = "bench-flood"

// flooder is a hostile subagent: one goroutine writing requests into the
// inbox as fast as it can (a temp file renamed into requests/, as a child
// publishes one), never waiting for an answer. It collects nothing: the
// driver removes what it left once the round is over (clearFlood).
type flooder struct {
	layout mailbox.Layout
	target string
	kind   askKind
	// payload, when positive, is the size in bytes of a "payload" object
	// added to every request (the child's opaque prompt facts).
	payload int

	written atomic.Int64
	mu      sync.Mutex
	ids     []string
}

// request builds the bytes of one flood request with a fresh id.
func (f *flooder) request(session string) (id string, data []byte, err error) {
	if id, err = forward.NewRequestID(); err != nil {
		return "", nil, err
	}
	req, err := forward.Ask{Session: session, Agent: "bench", Surface: f.kind.Surface, Value: f.kind.Value, Cwd: "/work"}.Request(id, f.target, time.Now().UnixMilli())
	if err != nil {
		return "", nil, fmt.Errorf("building a flood request: %w", err)
	}
	if data, err = wire.EncodeRequest(req); err != nil {
		return "", nil, fmt.Errorf("encoding a flood request: %w", err)
	}
	if f.payload > 0 {
		data = withPayload(data, f.payload)
	}
	return id, data, nil
}

// withPayload adds a "payload" member of about size bytes to an encoded
// request: spliced in rather than encoded, since re-validating a megabyte
// of JSON per request would make the driver, not the broker, the figure.
func withPayload(data []byte, size int) []byte {
	data = bytes.TrimRight(data, "\n")
	const head, tail = `,"payload":{"blob":"`, `"}}`
	n := max(size-len(head)-len(tail), 0)
	out := make([]byte, 0, len(data)-1+len(head)+n+len(tail))
	out = append(out, data[:len(data)-1]...) // without its closing brace
	out = append(out, head...)
	out = append(out, bytes.Repeat([]byte{'x'}, n)...)
	return append(out, tail...)
}

// write publishes one request of session and returns its id.
func (f *flooder) write(session, tmp string) error {
	id, data, err := f.request(session)
	if err != nil {
		return err
	}
	dst, err := f.layout.RequestPath(f.target, id)
	if err != nil {
		return err
	}
	staged := filepath.Join(tmp, id+".json.tmp")
	if err := os.WriteFile(staged, data, 0o600); err != nil {
		return fmt.Errorf("flooding: %w", err)
	}
	if err := os.Rename(staged, dst); err != nil {
		return fmt.Errorf("flooding: %w", err)
	}
	f.mu.Lock()
	f.ids = append(f.ids, id)
	f.mu.Unlock()
	f.written.Add(1)
	return nil
}

// run writes requests back to back until ctx ends, and returns the first
// failure to write (the run's end is not one).
func (f *flooder) run(ctx context.Context) error {
	if err := f.layout.EnsureInbox(f.target); err != nil {
		return err
	}
	tmp := f.layout.TempDir()
	if err := os.MkdirAll(tmp, 0o700); err != nil {
		return fmt.Errorf("flooding: %w", err)
	}
	for ctx.Err() == nil {
		if err := f.write(floodSession, tmp); err != nil {
			return err
		}
	}
	return nil
}

// waitInboxEmpty waits until requests/ holds no mail: the broker has
// answered (or been told to forget) everything written to it.
func waitInboxEmpty(ctx context.Context, layout mailbox.Layout, target string, timeout time.Duration) error {
	dir, err := layout.RequestsDir(target)
	if err != nil {
		return err
	}
	deadline := time.Now().Add(timeout)
	for {
		n := countMail(dir)
		if n == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d requests still in the inbox after %s: %w", n, timeout, errTimeout)
		}
		if err := sleep(ctx, 20*time.Millisecond); err != nil {
			return err
		}
	}
}

// floodRounds is how many times the flood comparison alternates quiet and
// flooded runs of the legitimate requester, so that the machine's drift
// lands on both sides.
const floodRounds = 3

// floodPhase measures the legitimate requester (rule-resolved asks, one
// requester of its own session) in rounds: quiet, then while a flood
// writer (a process of its own) writes requests of kind flood as fast as
// it can. Between rounds the flood is cleared and the inbox drained, so
// that every quiet run is quiet.
func (r *runner) floodPhase(ctx context.Context, label string, spec brokerSpec, flood askKind) (*FloodResult, error) {
	c := r.cfg.Counts
	d := newDriver(spec.root(), session, mailbox.WatchOptions{})
	layout := mailbox.Layout{Root: spec.root()}
	res := &FloodResult{Terminal: spec.Terminal, FloodKind: flood.Name}
	var quiet, flooded []time.Duration
	var firstErr error
	collect := func(lr loadResult, into *[]time.Duration) {
		*into = append(*into, lr.Latencies...)
		res.Failed += lr.Failed
		if err := lr.Err(); err != nil && firstErr == nil {
			firstErr = err
		}
	}
	per := c.Flood / floodRounds
	for round := range floodRounds {
		warmup := 0
		if round == 0 {
			warmup = c.Warmup
		}
		collect(d.closedLoop(ctx, ruleAsk, 1, warmup, per, c.FloodFor), &quiet)

		idsPath := filepath.Join(spec.Base, fmt.Sprintf("flood-ids-%d", round))
		p, err := startFlood(layout, session, idsPath, flood)
		if err != nil {
			return res, err
		}
		// The legitimate requester starts once the flood is under way,
		// as when a subagent has been flooding for a while.
		if err := sleep(ctx, c.FloodLead); err != nil {
			p.stop()
			return res, err
		}
		collect(d.closedLoop(ctx, ruleAsk, 1, 0, per, c.FloodFor), &flooded)
		written, took, err := p.stop()
		res.FloodWritten += written
		res.FloodSeconds += took.Seconds()
		if err != nil {
			return res, err
		}
		if ctx.Err() != nil {
			return res, context.Cause(ctx)
		}
		ids, err := readIDs(idsPath)
		if err != nil {
			return res, err
		}
		// What the broker still has of the flood: answered at deny
		// (wait for it), held at tty (withdrawn by removing it).
		drain := time.Now()
		if spec.Terminal == "tty" {
			waiting, err := clearFlood(ctx, layout, session, ids)
			res.FloodLeftWaiting += waiting
			if err != nil {
				return res, err
			}
		}
		if err := waitInboxEmpty(ctx, layout, session, 120*time.Second); err != nil {
			return res, fmt.Errorf("draining the flood: %w", err)
		}
		res.DrainSeconds += time.Since(drain).Seconds()
		if _, err := clearFlood(ctx, layout, session, ids); err != nil {
			return res, err
		}
		// A withdrawn ask leaves the broker on its next sweep (≤ 1 s).
		if err := sleep(ctx, 1200*time.Millisecond); err != nil {
			return res, err
		}
		r.progress("[%s]   round %d: %d flood requests written in %.2fs", label, round+1, written, took.Seconds())
	}
	res.Quiet, res.Flooded = Summarize(quiet), Summarize(flooded)
	res.P99Ratio = Ratio(res.Flooded.P99, res.Quiet.P99)
	res.P99DeltaUs = micros(res.Flooded.P99) - micros(res.Quiet.P99)
	res.P50Ratio = Ratio(res.Flooded.P50, res.Quiet.P50)
	if res.FloodSeconds > 0 {
		res.FloodPerSec = float64(res.FloodWritten) / res.FloodSeconds
	}
	return res, firstErr
}

// floodScenario: a broker with nobody at the terminal (--terminal deny);
// the flood's asks reach the terminal and are answered "unavailable".
func (r *runner) floodScenario(ctx context.Context, fr *FSResult, base string, _ bool) error {
	if fr.Label != "tmpfs" {
		r.progress("[%s] flood: measured on tmpfs only (a figure of fairness, not of the filesystem)", fr.Label)
		return nil
	}
	spec := brokerSpec{Label: fr.Label + "/flood", Base: base, Session: session, Terminal: "deny"}
	if r.cfg.CPUProfileDir != "" {
		spec.CPUProfile = filepath.Join(r.cfg.CPUProfileDir, "broker-"+fr.Label+"-flood.pprof")
	}
	b, err := r.start(ctx, spec)
	if err != nil {
		return err
	}
	c := r.cfg.Counts
	r.progress("[%s] a legitimate requester quiet and while another floods, --terminal deny (%d rounds of %d asks each side, at most %s)", fr.Label, floodRounds, c.Flood/floodRounds, c.FloodFor)
	res, err := r.floodPhase(ctx, fr.Label, spec, heldAsk)
	if res != nil {
		fr.FloodDeny = res
		r.progress("[%s]   %s", fr.Label, res.brief())
	}
	if err != nil {
		b.stop(30 * time.Second)
		return err
	}
	_, err = b.stop(60 * time.Second)
	return err
}

// floodTTYScenario: the operator's prompt on a pseudo-terminal nobody
// answers. A legitimate requester quiet and while another floods (the
// flood's asks are held at the prompt, up to the broker's bound); then a
// fresh broker holding asks with payloads of about 1 MiB.
func (r *runner) floodTTYScenario(ctx context.Context, fr *FSResult, base string, _ bool) error {
	if fr.Label != "tmpfs" {
		r.progress("[%s] floodtty: measured on tmpfs only (a figure of fairness and memory, not of the filesystem)", fr.Label)
		return nil
	}
	spec := brokerSpec{Label: fr.Label + "/floodtty", Base: filepath.Join(base, "flood"), Session: session, Terminal: "tty"}
	if r.cfg.CPUProfileDir != "" {
		spec.CPUProfile = filepath.Join(r.cfg.CPUProfileDir, "broker-"+fr.Label+"-floodtty.pprof")
	}
	b, err := r.start(ctx, spec)
	if err != nil {
		return err
	}
	c := r.cfg.Counts
	r.progress("[%s] a legitimate requester quiet and while another floods, --terminal tty (%d rounds of %d asks each side, at most %s)", fr.Label, floodRounds, c.Flood/floodRounds, c.FloodFor)
	res, ferr := r.floodPhase(ctx, fr.Label, spec, heldAsk)
	if res != nil {
		fr.FloodTTY = res
		r.progress("[%s]   %s", fr.Label, res.brief())
	}
	if _, err := b.stop(120 * time.Second); err != nil && ferr == nil {
		ferr = err
	}
	if ferr != nil {
		fr.Errors = append(fr.Errors, "flood at the tty: "+ferr.Error())
		r.progress("[%s] flood at the tty: FAILED: %v", fr.Label, ferr)
		if ctx.Err() != nil {
			return ferr
		}
	}
	return r.heldMiBPhase(ctx, fr, filepath.Join(base, "held"))
}

// heldMiBPhase holds HeldMiB asks of about 1 MiB each at a fresh tty
// broker whose bounds let them all wait, and reads its memory once they
// are all there.
func (r *runner) heldMiBPhase(ctx context.Context, fr *FSResult, base string) error {
	n := r.cfg.Counts.HeldMiB
	spec := brokerSpec{Label: fr.Label + "/held1mib", Base: base, Session: session, Terminal: "tty", Args: r.cfg.HeldMiBArgs}
	b, err := r.start(ctx, spec)
	if err != nil {
		return err
	}
	layout := mailbox.Layout{Root: spec.root()}
	tail := &logTail{path: spec.logPath()}
	r.progress("[%s] %d asks with payloads of about 1 MiB held at the terminal (broker flags %q)", fr.Label, n, strings.Join(spec.Args, " "))
	f := &flooder{layout: layout, target: session, kind: heldAsk, payload: heldPayload}
	if err := layout.EnsureInbox(session); err != nil {
		b.stop(30 * time.Second)
		return err
	}
	tmp := layout.TempDir()
	if err := os.MkdirAll(tmp, 0o700); err != nil {
		b.stop(30 * time.Second)
		return err
	}
	start := time.Now()
	for i := range n {
		// Spread over requesters of heldMiBPerSession asks each, as
		// many subagents would be.
		if err := f.write(fmt.Sprintf("bench-held-%d", i/heldMiBPerSession), tmp); err != nil {
			b.stop(30 * time.Second)
			return err
		}
		if ctx.Err() != nil {
			b.stop(30 * time.Second)
			return context.Cause(ctx)
		}
	}
	res := &HeldMiBResult{N: n, PayloadBytes: heldPayload, DropSeconds: time.Since(start).Seconds()}
	fr.HeldMiB = res
	if _, err := tail.waitCount(ctx, n, 180*time.Second, `"event":"forwarded_permission.prompted"`); err != nil {
		res.Error = err.Error()
		b.stop(60 * time.Second)
		return err
	}
	res.AtTerminalSeconds = time.Since(start).Seconds()
	// Two sweeps, so that the figure is the steady state.
	if err := sleep(ctx, 2*time.Second); err != nil {
		b.stop(30 * time.Second)
		return err
	}
	res.Memory, err = ReadMemory(b.pid())
	if err != nil {
		b.stop(30 * time.Second)
		return err
	}
	r.progress("[%s]   all at the terminal after %.2fs; VmRSS %s (peak %s)", fr.Label, res.AtTerminalSeconds, kib(res.Memory.RSS), kib(res.Memory.HWM))
	took, err := b.stop(180 * time.Second)
	res.StopSeconds = took.Seconds()
	return err
}

// heldPayload is the payload of each request of the memory figure: the
// file stays within mailbox.MaxFileSize (1 MiB) with the rest of the
// request.
const heldPayload = mailbox.MaxFileSize - 4<<10

// heldMiBPerSession is how many of those asks each requesting session
// makes.
const heldMiBPerSession = 50

func (res *FloodResult) brief() string {
	s := fmt.Sprintf("quiet p50 %s p99 %s; flooded p50 %s p99 %s (p99 %+d µs, ×%.2f); flood %.0f requests/s (%d written)",
		us(res.Quiet.P50), us(res.Quiet.P99), us(res.Flooded.P50), us(res.Flooded.P99), res.P99DeltaUs, res.P99Ratio, res.FloodPerSec, res.FloodWritten)
	if res.Failed > 0 {
		s += fmt.Sprintf("; %d FAILED", res.Failed)
	}
	return s
}
