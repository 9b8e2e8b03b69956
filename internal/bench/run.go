package bench

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/seed6639df8c/courier/mailbox"
	"github.com/seed6639df8c/courier/rules"
)

// Filesystem is a place to put mailbox roots, with the label the figures
// measured there carry.
type Filesystem struct {
	Label string
	Dir   string
}

// Counts size the workloads. DefaultCounts keeps a whole run of both
// filesystems under five minutes on two cores.
type Counts struct {
	// Serial is the number of measured asks of a one-requester latency run
	// (rule-resolved); Plugin the same through a plugin or shadow link;
	// Held the asks on each side (without and with an ask held) of the
	// held-ask comparison.
	Serial, Plugin, Held int
	// SerialFor, PluginFor and HeldFor cap those runs in time (HeldFor
	// each side of each round), so that a slow disk under a loaded machine
	// keeps the run within its five minutes; the table gives every n.
	SerialFor, PluginFor, HeldFor time.Duration
	// ChildrenFor caps the child-process runs likewise.
	ChildrenFor time.Duration
	// Warmup asks per requester, not measured.
	Warmup int
	// LoadFor is how long each rule-resolved throughput run lasts.
	LoadFor time.Duration
	// PollSerialFor and PollLoadFor are the poll-mode runs; at 250 ms a
	// round trip they need seconds for a few dozen samples.
	PollSerialFor, PollLoadFor time.Duration
	// Idle is the idle-CPU window.
	Idle time.Duration
	// Pending and Backlog are the 10,000-request figures.
	Pending, Backlog int
	// Children is how many `child ask` processes of each kind run.
	Children int
}

// DefaultCounts are the counts of `make bench`.
var DefaultCounts = Counts{
	Serial: 2000, Plugin: 1000, Held: 1000, Warmup: 50,
	SerialFor: 8 * time.Second, PluginFor: 5 * time.Second, HeldFor: 2 * time.Second,
	ChildrenFor:   8 * time.Second,
	LoadFor:       3 * time.Second,
	PollSerialFor: 8 * time.Second, PollLoadFor: 3 * time.Second,
	Idle:    10 * time.Second,
	Pending: 10_000, Backlog: 10_000,
	Children: 100,
}

// Requesters are the concurrency levels of the throughput runs.
var Requesters = []int{1, 8, 32}

// PollInterval is pi's cadence, the baseline's.
const PollInterval = 250 * time.Millisecond

// Config is one benchmark run.
type Config struct {
	// BinDir holds broker, child and courier-authz-readonly.
	BinDir      string
	Filesystems []Filesystem
	Counts      Counts
	// Progress receives a line per step while the run goes (stderr).
	Progress io.Writer
	// CPUProfileDir, when set, makes the first filesystem's rule-resolved
	// broker write a CPU profile of its whole life there (broker serve's
	// hidden --cpuprofile flag).
	CPUProfileDir string
	// Command is recorded in the results.
	Command string
	// Budget, when positive, is the time after which scenarios not yet
	// started are skipped (and reported as not measured), so that a
	// machine loaded by others cannot stretch the run past its five
	// minutes. DefaultBudget is make bench's.
	Budget time.Duration
	// Only, when not empty, runs just the named scenarios (rule, plugin,
	// shadow, poll, tty, backlog): for profiling one of them. Figures of
	// the others are then missing and their targets not judged.
	Only []string
}

// DefaultBudget leaves the slowest scenario (the disk's 10,000 held
// asks, about 40 s on a loaded machine) room inside five minutes.
const DefaultBudget = 4*time.Minute + 15*time.Second

// Scenarios are the names Config.Only accepts, in the order they run.
var Scenarios = []string{"rule", "plugin", "shadow", "poll", "tty", "backlog"}

// runner owns everything a run starts: it stops every broker and removes
// every directory it made, also when the run fails or is interrupted.
type runner struct {
	cfg   Config
	began time.Time

	mu      sync.Mutex
	brokers []*brokerProc
	bases   []string
}

// Run measures every figure on every filesystem. It returns the results
// so far with an error only when it could not go on (the context ended, a
// filesystem could not be used); a figure that failed is recorded in its
// FSResult.Errors and the run continues.
func Run(ctx context.Context, cfg Config) (res *Results, err error) {
	r := &runner{cfg: cfg, began: time.Now()}
	defer func() {
		if cerr := r.cleanup(); cerr != nil && err == nil {
			err = cerr
		}
	}()
	res = &Results{Started: time.Now(), Command: cfg.Command, Machine: readMachine()}
	defer func() {
		// Also after an interruption: what was measured is reported, and
		// what was not shows as not measured.
		res.Machine.LoadEnd = readLoad()
		res.Seconds = time.Since(res.Started).Seconds()
		res.judge()
	}()
	for _, fs := range cfg.Filesystems {
		fr, err := r.runFilesystem(ctx, fs, len(res.Filesystems) == 0)
		if fr != nil {
			res.Filesystems = append(res.Filesystems, fr)
		}
		if err != nil {
			return res, err
		}
	}
	return res, nil
}

func (r *runner) progress(format string, args ...any) {
	if r.cfg.Progress != nil {
		elapsed := fmt.Sprintf("%4.0fs ", time.Since(r.began).Seconds())
		fmt.Fprintf(r.cfg.Progress, "courier-bench: "+elapsed+format+"\n", args...)
	}
}

func (r *runner) bin(name string) string { return filepath.Join(r.cfg.BinDir, name) }

// start starts a broker and registers it for cleanup.
func (r *runner) start(ctx context.Context, spec brokerSpec) (*brokerProc, error) {
	if err := os.MkdirAll(spec.Base, 0o700); err != nil {
		return nil, fmt.Errorf("broker %s: %w", spec.Label, err)
	}
	b, err := startBroker(ctx, r.bin("broker"), spec)
	if err != nil {
		return nil, err
	}
	r.track(b)
	return b, nil
}

func (r *runner) track(b *brokerProc) {
	r.mu.Lock()
	r.brokers = append(r.brokers, b)
	r.mu.Unlock()
}

// cleanup stops every broker still running and removes the run's
// directories.
func (r *runner) cleanup() error {
	r.mu.Lock()
	brokers, bases := r.brokers, r.bases
	r.brokers, r.bases = nil, nil
	r.mu.Unlock()
	var errs []error
	for _, b := range brokers {
		if _, err := b.stop(30 * time.Second); err != nil && !errors.Is(err, errStopKilled) {
			errs = append(errs, err)
		}
	}
	for _, dir := range bases {
		if err := os.RemoveAll(dir); err != nil {
			errs = append(errs, fmt.Errorf("removing %s: %w", dir, err))
		}
	}
	return errors.Join(errs...)
}

// runFilesystem measures every figure with mailbox roots under fs.Dir.
func (r *runner) runFilesystem(ctx context.Context, fs Filesystem, first bool) (*FSResult, error) {
	base, err := os.MkdirTemp(fs.Dir, "courier-bench-")
	if err != nil {
		return nil, fmt.Errorf("%s: %w", fs.Label, err)
	}
	r.mu.Lock()
	r.bases = append(r.bases, base)
	r.mu.Unlock()
	fr := &FSResult{Label: fs.Label, Dir: fs.Dir, FSType: fsType(fs.Dir), ProjectFS: sameFilesystem(fs.Dir, ".")}
	r.progress("[%s] mailbox roots under %s (%s)", fs.Label, base, fr.FSType)

	steps := []struct {
		name string
		run  func(context.Context, *FSResult, string, bool) error
	}{
		{"rule", r.ruleScenario},
		{"plugin", r.pluginScenario},
		{"shadow", r.shadowScenario},
		{"poll", r.pollScenario},
		{"tty", r.ttyScenario},
		{"backlog", r.backlogScenario},
	}
	for _, s := range steps {
		if len(r.cfg.Only) > 0 && !slices.Contains(r.cfg.Only, s.name) {
			continue
		}
		if r.cfg.Budget > 0 && time.Since(r.began) > r.cfg.Budget {
			fr.Errors = append(fr.Errors, fmt.Sprintf("%s: not run: past the run's time budget of %s", s.name, r.cfg.Budget))
			r.progress("[%s] %s: skipped, past the time budget of %s", fs.Label, s.name, r.cfg.Budget)
			continue
		}
		err := s.run(ctx, fr, filepath.Join(base, s.name), first)
		if ctx.Err() != nil {
			return fr, context.Cause(ctx)
		}
		if err != nil {
			fr.Errors = append(fr.Errors, fmt.Sprintf("%s: %v", s.name, err))
			r.progress("[%s] %s: FAILED: %v", fs.Label, s.name, err)
		}
	}
	if fr.Rule != nil && fr.Poll != nil {
		fr.PollRatio = Ratio(fr.Poll.Latency.P50, fr.Rule.Latency.P50)
	}
	return fr, nil
}

// failed records a load run whose asks did not all get their expected
// answer as an error of the filesystem's results: the figure stands, but
// the run is not a clean one.
func (fr *FSResult) failed(name string, lr *LoadRun) {
	if lr != nil && (lr.Failed > 0 || lr.Asks == 0) {
		fr.Errors = append(fr.Errors, fmt.Sprintf("%s, %d requesters: %d asks failed, %d answered: %s", name, lr.Requesters, lr.Failed, lr.Asks, lr.Error))
	}
}

const session = "bench-parent"

// ruleScenario: the default rules, nobody at the terminal. The broker
// idle as it starts; the rule-resolved round trip, throughput at 1/8/32
// requesters, real child processes; then the same broker idle again.
func (r *runner) ruleScenario(ctx context.Context, fr *FSResult, base string, first bool) error {
	cfgPath := filepath.Join(base, "rules.json")
	cfgDoc, err := benchConfig()
	if err == nil {
		err = os.MkdirAll(base, 0o700)
	}
	if err == nil {
		err = os.WriteFile(cfgPath, cfgDoc, 0o600)
	}
	if err != nil {
		return fmt.Errorf("the bench config: %w", err)
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
	for _, n := range Requesters {
		r.progress("[%s] rule-resolved throughput, %d requesters, %s", fr.Label, n, c.LoadFor)
		lr := r.measure(ctx, b, d, ruleAsk, n, 5, 0, c.LoadFor)
		fr.Load = append(fr.Load, lr)
		fr.failed("rule-resolved throughput", lr)
		r.progress("[%s]   %s", fr.Label, lr.brief())
	}

	r.progress("[%s] %d real `child ask` processes and %d that only start (at most %s)", fr.Label, c.Children, c.Children, c.ChildrenFor)
	ch, err := runChildren(ctx, r.bin("child"), spec.root(), filepath.Join(base, "agent"), session, c.Children, c.ChildrenFor)
	if err != nil {
		return err
	}
	ch.InLibrary = fr.Rule.Latency
	fr.Children = &ch
	if ch.Failed > 0 {
		fr.Errors = append(fr.Errors, fmt.Sprintf("child processes: %d failed: %s", ch.Failed, ch.Error))
	}
	r.progress("[%s]   child ask p50 %s, start alone p50 %s, in-library p50 %s", fr.Label, us(ch.Ask.P50), us(ch.Start.P50), us(ch.InLibrary.P50))

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

// measure runs a closed loop against the broker b and turns it into a
// LoadRun, with the CPU each side spent per ask. The CPU samples bracket
// the warm-up too, which at a few asks per requester is noise.
func (r *runner) measure(ctx context.Context, b *brokerProc, d *driver, k askKind, requesters, warmup, count int, duration time.Duration) *LoadRun {
	before := d.fallbacks.Load()
	b0, berr0 := ReadCPU(b.pid())
	d0, derr0 := ReadCPU(os.Getpid())
	res := d.closedLoop(ctx, k, requesters, warmup, count, duration)
	b1, berr1 := ReadCPU(b.pid())
	d1, derr1 := ReadCPU(os.Getpid())
	lr := newLoadRun(res, d.fallbacks.Load()-before)
	if asks := len(res.Latencies) + requesters*warmup; asks > 0 {
		if berr0 == nil && berr1 == nil {
			lr.BrokerCPUPerAskUs = micros(b1.Since(b0).ExecUsed / time.Duration(asks))
		}
		if derr0 == nil && derr1 == nil {
			lr.DriverCPUPerAskUs = micros(d1.Since(d0).ExecUsed / time.Duration(asks))
		}
	}
	return lr
}

func (lr *LoadRun) brief() string {
	s := fmt.Sprintf("%d asks in %.2fs = %.0f asks/s; p50 %s p90 %s p99 %s max %s; CPU per ask: broker %dµs, requesters %dµs", lr.Asks, lr.Seconds, lr.AsksPerSec,
		us(lr.Latency.P50), us(lr.Latency.P90), us(lr.Latency.P99), us(lr.Latency.Max), lr.BrokerCPUPerAskUs, lr.DriverCPUPerAskUs)
	if lr.Failed > 0 {
		s += fmt.Sprintf("; %d FAILED: %s", lr.Failed, lr.Error)
	}
	if lr.WatchFallbacks > 0 {
		s += fmt.Sprintf("; %d watch fallbacks to polling", lr.WatchFallbacks)
	}
	return s
}

// measureIdle samples a process's CPU over window after a short settle.
func measureIdle(ctx context.Context, pid int, window time.Duration) (*IdleResult, error) {
	if err := sleep(ctx, time.Second); err != nil {
		return nil, err
	}
	before, err := ReadCPU(pid)
	if err != nil {
		return nil, err
	}
	if err := sleep(ctx, window); err != nil {
		return nil, err
	}
	after, err := ReadCPU(pid)
	if err != nil {
		return nil, err
	}
	mem, err := ReadMemory(pid)
	if err != nil {
		return nil, err
	}
	u := after.Since(before)
	return &IdleResult{
		Seconds: u.Wall.Seconds(), TicksPercent: u.TicksPercent, TicksUsed: u.TicksUsed,
		ExecPercent: u.ExecPercent, ExecUsedUs: micros(u.ExecUsed), Memory: mem,
	}, nil
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return context.Cause(ctx)
	case <-t.C:
		return nil
	}
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
	cfg := map[string]any{
		"authorizerChain": []map[string]any{{
			"name": pluginLinkName, "path": abs, "sha256": hex.EncodeToString(sum[:]), "timeoutMs": 5000, "mode": mode,
		}},
	}
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
	spec := brokerSpec{Label: fr.Label + "/tty", Base: base, Session: session, Terminal: "tty"}
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

// us formats a duration in whole microseconds.
func us(d time.Duration) string { return fmt.Sprintf("%dµs", micros(d)) }

func readMachine() Machine {
	m := Machine{CPUs: runtime.NumCPU(), GoVersion: runtime.Version(), LoadStart: readLoad()}
	if data, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for line := range strings.Lines(string(data)) {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				m.CPUModel = strings.TrimSpace(v)
				break
			}
		}
	}
	if data, err := os.ReadFile("/proc/meminfo"); err == nil {
		for line := range strings.Lines(string(data)) {
			if v, ok := strings.CutPrefix(line, "MemTotal:"); ok {
				m.MemTotal = strings.TrimSpace(v)
				break
			}
		}
	}
	if data, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = strings.TrimSpace(string(data))
	}
	return m
}

func readLoad() string {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(data))
	if len(f) < 3 {
		return ""
	}
	return strings.Join(f[:3], " ")
}

// QuickCounts are a smoke run's counts: every scenario runs, in well under
// a minute, and the figures mean little.
var QuickCounts = Counts{
	Serial: 200, Plugin: 100, Held: 100, Warmup: 5,
	SerialFor: 2 * time.Second, PluginFor: 2 * time.Second, HeldFor: time.Second,
	ChildrenFor:   2 * time.Second,
	LoadFor:       500 * time.Millisecond,
	PollSerialFor: time.Second, PollLoadFor: time.Second,
	Idle:    2 * time.Second,
	Pending: 500, Backlog: 500,
	Children: 10,
}

// benchConfig is the embedded default config plus one allowed tool
// surface for noParseAsk, inserted as the first rule after the default so
// that nothing else changes meaning (key order is meaning).
func benchConfig() ([]byte, error) {
	def := string(rules.DefaultConfigJSON())
	const anchor = `"*": "ask",`
	i := strings.Index(def, anchor)
	if i < 0 {
		return nil, errors.New("the embedded default config has no default action to anchor the bench rule on")
	}
	i += len(anchor)
	return []byte(def[:i] + "\n    \"webfetch\": {\"https://example.com/*\": \"allow\"}," + def[i:]), nil
}
