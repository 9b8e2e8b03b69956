package bench

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/seed6639df8c/courier/mailbox"
	"github.com/seed6639df8c/courier/rules"
)

// ruleScenario: the default rules, nobody at the terminal. The broker
// idle as it starts; the rule-resolved round trip, throughput at 1/8/32
// requesters; then the same broker idle again. (Real child processes are
// a scenario of their own: childScenario.)
func (r *runner) ruleScenario(ctx context.Context, fr *FSResult, base string, first bool) error {
	cfgPath, err := writeBenchConfig(base)
	if err != nil {
		return err
	}
	spec := brokerSpec{Label: fr.Label + "/rule", Base: base, Session: session, Terminal: "deny", Config: cfgPath}
	if first && r.cfg.CPUProfileDir != "" {
		spec.CPUProfile = filepath.Join(r.cfg.CPUProfileDir, "broker-"+fr.Label+"-rule.pprof")
	}
	b, err := r.start(ctx, spec)
	if err != nil {
		return err
	}
	c := r.cfg.Counts
	r.progress("[%s] fresh broker idle for %s", fr.Label, c.Idle)
	fresh, err := measureIdle(ctx, b.pid(), c.Idle)
	if err != nil {
		return err
	}
	fr.IdleFresh = fresh
	r.progress("[%s]   %.4f %% of a core (schedstat), %d ticks; VmRSS %d KiB", fr.Label, fresh.ExecPercent, fresh.TicksUsed, fresh.Memory.RSS)

	d := newDriver(spec.root(), session, mailbox.WatchOptions{})
	r.progress("[%s] rule-resolved round trip, 1 requester, %d asks (at most %s)", fr.Label, c.Serial, c.SerialFor)
	fr.Rule = r.measure(ctx, b, d, ruleAsk, 1, c.Warmup, c.Serial, c.SerialFor)
	fr.failed("rule-resolved round trip", fr.Rule)
	r.progress("[%s]   %s", fr.Label, fr.Rule.brief())
	r.progress("[%s] what the bash parser costs: a tool surface, one command and three in turn, %d asks each", fr.Label, c.Serial)
	runs := d.interleaved(ctx, []askKind{noParseAsk, ruleAsk, compoundAsk}, c.Warmup, c.Serial)
	fr.Parse = &ParseResult{NoParse: newLoadRun(runs[0], 0), One: newLoadRun(runs[1], 0), Three: newLoadRun(runs[2], 0)}
	for i, name := range []string{"no parse", "one command", "three commands"} {
		lr := []*LoadRun{fr.Parse.NoParse, fr.Parse.One, fr.Parse.Three}[i]
		fr.failed("bash parse cost, "+name, lr)
		r.progress("[%s]   %s: %s", fr.Label, name, summaryCell(lr.Latency))
	}
	r.progress("[%s] an inbox a pi child's cleanup removed, in turn with one left as it is, %d asks each", fr.Label, c.Serial)
	steady, recreated := d.recreation(ctx, c.Warmup, c.Serial)
	fr.Recreate = &RecreateResult{Steady: newLoadRun(steady, 0), Recreated: newLoadRun(recreated, 0)}
	fr.failed("inbox left as it is", fr.Recreate.Steady)
	fr.failed("inbox removed by a pi child's cleanup", fr.Recreate.Recreated)
	r.progress("[%s]   steady %s; recreated %s", fr.Label, summaryCell(fr.Recreate.Steady.Latency), summaryCell(fr.Recreate.Recreated.Latency))
	for _, n := range Requesters {
		r.progress("[%s] rule-resolved throughput, %d requesters, %s", fr.Label, n, c.LoadFor)
		lr := r.measure(ctx, b, d, ruleAsk, n, 5, 0, c.LoadFor)
		fr.Load = append(fr.Load, lr)
		fr.failed("rule-resolved throughput", lr)
		r.progress("[%s]   %s", fr.Label, lr.brief())
	}

	r.progress("[%s] the same broker idle for %s after serving", fr.Label, c.Idle)
	idle, err := measureIdle(ctx, b.pid(), c.Idle)
	if err != nil {
		return err
	}
	fr.Idle = idle
	r.progress("[%s]   %.4f %% of a core (schedstat), %d ticks; VmRSS %d KiB", fr.Label, idle.ExecPercent, idle.TicksUsed, idle.Memory.RSS)
	_, err = b.stop(30 * time.Second)
	return err
}

// linkConfig writes a rules config with one read-only plugin link in the
// given mode and returns its path.
func (r *runner) linkConfig(base, mode string) (string, error) {
	path := r.bin("courier-authz-readonly")
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", err
	}
	data, err := os.ReadFile(abs)
	if err != nil {
		return "", fmt.Errorf("reading the plugin binary: %w", err)
	}
	sum := sha256.Sum256(data)
	// The default rules, with the link: a config without a "permission"
	// object is refused (it would drop the built-in denies).
	var cfg map[string]any
	if err := json.Unmarshal(rules.DefaultConfigJSON(), &cfg); err != nil {
		return "", fmt.Errorf("the embedded default config: %w", err)
	}
	cfg["authorizerChain"] = []map[string]any{{
		"name": pluginLinkName, "path": abs, "sha256": hex.EncodeToString(sum[:]), "timeoutMs": 5000, "mode": mode,
	}}
	out, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(base, 0o700); err != nil {
		return "", err
	}
	cfgPath := filepath.Join(base, "config.json")
	return cfgPath, os.WriteFile(cfgPath, out, 0o600)
}

// pluginScenario: the default rules leave `cat README.md` to ask, and one
// enforcing read-only link allows it.
func (r *runner) pluginScenario(ctx context.Context, fr *FSResult, base string, _ bool) error {
	lr, err := r.linkScenario(ctx, fr, base, "enforce", pluginAsk)
	fr.Plugin = lr
	fr.failed("one plugin link", lr)
	return err
}

// shadowScenario: the same link in shadow mode is consulted beside the
// chain and never waited for; the ask goes on to the headless terminal.
func (r *runner) shadowScenario(ctx context.Context, fr *FSResult, base string, _ bool) error {
	lr, err := r.linkScenario(ctx, fr, base, "shadow", shadowAsk)
	fr.Shadow = lr
	fr.failed("one shadow link", lr)
	return err
}

func (r *runner) linkScenario(ctx context.Context, fr *FSResult, base, mode string, k askKind) (*LoadRun, error) {
	cfgPath, err := r.linkConfig(base, mode)
	if err != nil {
		return nil, err
	}
	spec := brokerSpec{Label: fr.Label + "/" + mode, Base: base, Session: session, Terminal: "deny", Config: cfgPath}
	b, err := r.start(ctx, spec)
	if err != nil {
		return nil, err
	}
	c := r.cfg.Counts
	d := newDriver(spec.root(), session, mailbox.WatchOptions{})
	r.progress("[%s] through one %s plugin link, 1 requester, %d asks (at most %s)", fr.Label, mode, c.Plugin, c.PluginFor)
	lr := r.measure(ctx, b, d, k, 1, c.Warmup, c.Plugin, c.PluginFor)
	r.progress("[%s]   %s", fr.Label, lr.brief())
	_, err = b.stop(30 * time.Second)
	return lr, err
}

// pollScenario: pi's design, both sides scanning every 250 ms.
func (r *runner) pollScenario(ctx context.Context, fr *FSResult, base string, _ bool) error {
	spec := brokerSpec{Label: fr.Label + "/poll", Base: base, Session: session, Terminal: "deny", Poll: PollInterval}
	b, err := r.start(ctx, spec)
	if err != nil {
		return err
	}
	c := r.cfg.Counts
	d := newDriver(spec.root(), session, mailbox.WatchOptions{Mode: mailbox.WatchPoll, PollInterval: PollInterval})
	r.progress("[%s] poll baseline (both sides at %s), 1 requester, %s", fr.Label, PollInterval, c.PollSerialFor)
	fr.Poll = r.measure(ctx, b, d, ruleAsk, 1, 1, 0, c.PollSerialFor)
	fr.failed("poll baseline", fr.Poll)
	r.progress("[%s]   %s", fr.Label, fr.Poll.brief())
	for _, n := range Requesters {
		r.progress("[%s] poll baseline throughput, %d requesters, %s", fr.Label, n, c.PollLoadFor)
		lr := r.measure(ctx, b, d, ruleAsk, n, 1, 0, c.PollLoadFor)
		fr.PollLoad = append(fr.PollLoad, lr)
		fr.failed("poll baseline throughput", lr)
		r.progress("[%s]   %s", fr.Label, lr.brief())
	}
	_, err = b.stop(30 * time.Second)
	return err
}

// ttyScenario: a broker whose terminal is the operator's prompt on a
// pseudo-terminal nobody types at. First the rule-resolved round trip
// without and with one ask held there; then 10,000 asks held there.
func (r *runner) ttyScenario(ctx context.Context, fr *FSResult, base string, _ bool) error {
	// The 10,000 held asks come from one requesting session: the broker's
	// bounds on waiting asks (64 per session, 1,024 in all) are lifted, or
	// all but 64 would be answered "unavailable" at once.
	spec := brokerSpec{Label: fr.Label + "/tty", Base: base, Session: session, Terminal: "tty", Args: unbounded}
	b, err := r.start(ctx, spec)
	if err != nil {
		return err
	}
	if err := r.heldPhase(ctx, fr, spec, b); err != nil {
		fr.Errors = append(fr.Errors, "held: "+err.Error())
		r.progress("[%s] held: FAILED: %v", fr.Label, err)
		if ctx.Err() != nil {
			return err
		}
	}
	return r.pendingPhase(ctx, fr, spec, b)
}

// unbounded are the `broker serve` flags that lift its bounds on asks
// waiting for the terminal.
var unbounded = []string{"--max-pending-per-requester", "0", "--max-pending", "0"}

// heldRounds is how many times the held-ask comparison alternates: each
// round measures Held/heldRounds asks without, then with one ask held, so
// that drift in the machine's load lands on both sides.
const heldRounds = 3

// heldPhase: the rule-resolved round trip alternately without and with one
// ask held at the prompt.
func (r *runner) heldPhase(ctx context.Context, fr *FSResult, spec brokerSpec, b *brokerProc) error {
	c := r.cfg.Counts
	d := newDriver(spec.root(), session, mailbox.WatchOptions{})
	tail := &logTail{path: spec.logPath()}
	r.progress("[%s] rule-resolved round trip without and with one ask held at the terminal (%d rounds of %d asks each side, at most %s)", fr.Label, heldRounds, c.Held/heldRounds, c.HeldFor)
	var without, with []time.Duration
	failed := 0
	var firstErr error
	collect := func(lr loadResult, into *[]time.Duration) {
		*into = append(*into, lr.Latencies...)
		failed += lr.Failed
		if err := lr.Err(); err != nil && firstErr == nil {
			firstErr = err
		}
	}
	for round := range heldRounds {
		warmup := 0
		if round == 0 {
			warmup = c.Warmup
		}
		collect(d.closedLoop(ctx, ruleAsk, 1, warmup, c.Held/heldRounds, c.HeldFor), &without)
		if _, err := tail.count(); err != nil { // skip what is logged so far
			return err
		}
		holdCtx, release := context.WithCancel(ctx)
		holdDone := make(chan struct{})
		go func() {
			defer close(holdDone)
			// Its answer is "unavailable" when released; not measured.
			c := d.client()
			defer c.Close()
			_, _ = d.ask(holdCtx, c, "bench-held", heldAsk)
		}()
		_, err := tail.waitCount(ctx, 1, 10*time.Second, `"event":"forwarded_permission.prompted"`)
		if err == nil {
			collect(d.closedLoop(ctx, ruleAsk, 1, 0, c.Held/heldRounds, c.HeldFor), &with)
		}
		release()
		<-holdDone
		if err != nil {
			return fmt.Errorf("the held ask never reached the terminal: %w", err)
		}
		// The broker notices a withdrawn request on its next sweep (≤ 1 s):
		// until then the ask is still held.
		if err := sleep(ctx, 1200*time.Millisecond); err != nil {
			return err
		}
	}
	h := &HeldResult{Baseline: Summarize(without), Held: Summarize(with), Failed: failed}
	h.P99Ratio = Ratio(h.Held.P99, h.Baseline.P99)
	fr.Held = h
	r.progress("[%s]   p99 %s without, %s with one held (×%.2f); p50 %s / %s", fr.Label, us(h.Baseline.P99), us(h.Held.P99), h.P99Ratio, us(h.Baseline.P50), us(h.Held.P50))
	return firstErr
}

// pendingPhase holds N asks at the prompt, measures the broker, and stops
// it, which answers them all.
func (r *runner) pendingPhase(ctx context.Context, fr *FSResult, spec brokerSpec, b *brokerProc) error {
	n := r.cfg.Counts.Pending
	layout := mailbox.Layout{Root: spec.root()}
	tail := &logTail{path: spec.logPath()}
	if _, err := tail.count(); err != nil {
		return err
	}
	r.progress("[%s] %d asks held at the terminal (the tty prompt's queue)", fr.Label, n)
	start := time.Now()
	if err := dropRequests(ctx, layout, session, heldAsk, n); err != nil {
		return err
	}
	dropped := time.Since(start)
	if _, err := tail.waitCount(ctx, n, 120*time.Second, `"event":"forwarded_permission.prompted"`); err != nil {
		return err
	}
	p := &PendingResult{N: n, HeldBy: "tty prompt queue", DropSeconds: dropped.Seconds(), AtTerminalSeconds: time.Since(start).Seconds()}
	fr.Pending = p
	// Two sweeps, so the memory is the steady state, not the arrival.
	if err := sleep(ctx, 2*time.Second); err != nil {
		return err
	}
	cpu0, err := ReadCPU(b.pid())
	if err != nil {
		return err
	}
	if err := sleep(ctx, 5*time.Second); err != nil {
		return err
	}
	cpu1, err := ReadCPU(b.pid())
	if err != nil {
		return err
	}
	p.CPUExecPercent = cpu1.Since(cpu0).ExecPercent
	if p.Memory, err = ReadMemory(b.pid()); err != nil {
		return err
	}
	r.progress("[%s]   all at the terminal after %.2fs; VmRSS %d KiB (peak %d KiB); %.2f %% of a core while holding them", fr.Label, p.AtTerminalSeconds, p.Memory.RSS, p.Memory.HWM, p.CPUExecPercent)
	took, err := b.stop(120 * time.Second)
	p.StopSeconds = took.Seconds()
	if dir, derr := layout.ResponsesDir(session); derr == nil {
		p.Answered = countMail(dir)
	}
	r.progress("[%s]   stopped in %.2fs, answering %d of them \"the session ended\"", fr.Label, p.StopSeconds, p.Answered)
	return err
}

func countMail(dir string) int {
	f, err := os.Open(dir)
	if err != nil {
		return 0
	}
	defer f.Close()
	names, _ := f.Readdirnames(-1)
	n := 0
	for _, name := range names {
		if mailbox.IsMailName(name) {
			n++
		}
	}
	return n
}

// backlogScenario: N rule-resolved requests written before the broker
// starts; time from its start to the last response.
func (r *runner) backlogScenario(ctx context.Context, fr *FSResult, base string, _ bool) error {
	n := r.cfg.Counts.Backlog
	spec := brokerSpec{Label: fr.Label + "/backlog", Base: base, Session: session, Terminal: "deny"}
	if err := os.MkdirAll(base, 0o700); err != nil {
		return err
	}
	layout := mailbox.Layout{Root: spec.root()}
	r.progress("[%s] backlog: %d requests written, then the broker started", fr.Label, n)
	if err := dropRequests(ctx, layout, session, ruleAsk, n); err != nil {
		return err
	}
	respDir, err := layout.ResponsesDir(session)
	if err != nil {
		return err
	}
	counter, err := newResponseCounter(respDir)
	if err != nil {
		return err
	}
	defer counter.close()
	b, err := launchBroker(r.bin("broker"), spec)
	if err != nil {
		return err
	}
	r.track(b)
	// When the broker starts serving is a side figure, watched beside the
	// count; the broker's exit ends the wait, so this goroutine ends with
	// the scenario.
	var ready time.Duration
	readyDone := make(chan struct{})
	go func() {
		defer close(readyDone)
		if b.waitReady(ctx, startupTimeout) == nil {
			ready = time.Since(b.started)
		}
	}()
	last, err := counter.await(ctx, n, 60*time.Second)
	if err != nil {
		b.stop(30 * time.Second)
		<-readyDone
		return err
	}
	<-readyDone
	res := &BacklogResult{N: n, Seconds: last.Sub(b.started).Seconds(), ReadySeconds: ready.Seconds(), CountedByListing: counter.Polled}
	res.Memory, _ = ReadMemory(b.pid())
	fr.Backlog = res
	r.progress("[%s]   served in %.2fs (heartbeat at %.3fs); VmRSS %d KiB", fr.Label, res.Seconds, res.ReadySeconds, res.Memory.RSS)
	_, err = b.stop(30 * time.Second)
	return err
}
