package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"
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
	// ChildrenFor caps the child-process rounds likewise.
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
	// Children is how many rounds of child processes run (each a `child
	// ask`, a `child hook`, a child with no parent, a program that does
	// nothing and an in-library ask).
	Children int
	// Flood is the legitimate requester's asks on each side (quiet and
	// flooded) of the flood comparison, FloodFor caps each run of it in
	// time, and FloodLead is how long the flood runs before the
	// legitimate requester starts.
	Flood               int
	FloodFor, FloodLead time.Duration
	// HeldMiB is the number of asks of about 1 MiB held at the tty for
	// the memory figure.
	HeldMiB int
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
	Flood:    900, FloodLead: 300 * time.Millisecond, FloodFor: 3 * time.Second,
	HeldMiB: 3000,
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
	// broker, and the nats scenario's brokers, write a CPU profile of
	// their whole life there (broker serve's hidden --cpuprofile flag).
	CPUProfileDir string
	// Command is recorded in the results.
	Command string
	// Budget, when positive, is the time after which scenarios not yet
	// started are skipped (and reported as not measured), so that a
	// machine loaded by others cannot stretch the run past its five
	// minutes. DefaultBudget is make bench's.
	Budget time.Duration
	// Only, when not empty, runs just the named scenarios (rule, child,
	// plugin, shadow, poll, tty, backlog, nats): for profiling one of them. Figures of
	// the others are then missing and their targets not judged.
	Only []string
	// HeldMiBArgs are the `broker serve` flags of the broker that holds
	// Counts.HeldMiB asks of about 1 MiB: bounds that let them all wait
	// (DefaultHeldMiBArgs).
	HeldMiBArgs []string
}

// DefaultHeldMiBArgs raise the broker's bound on asks waiting in all
// (serve.DefaultMaxPending) above the 3,000 of the memory figure, so that
// every one of them is held rather than refused at once.
var DefaultHeldMiBArgs = []string{"--max-pending", "4096"}

// DefaultBudget leaves the slowest scenario (the disk's 10,000 held
// asks, about 40 s on a loaded machine) room inside five minutes.
const DefaultBudget = 4*time.Minute + 15*time.Second

// Scenarios are the names Config.Only accepts, in the order they run.
var Scenarios = []string{"rule", "child", "plugin", "shadow", "poll", "tty", "backlog", "nats", "flood", "floodtty"}

// OnRequest are the scenarios that run only when Config.Only names them:
// the floods of issue 14 take a minute and a half and write gigabytes,
// and the whole run keeps to its five minutes without them.
var OnRequest = []string{"flood", "floodtty"}

// FirstFilesystemOnly are the scenarios measured on the run's first
// filesystem only: the NATS transport's figures are the engine's, not the
// mailbox filesystem's.
var FirstFilesystemOnly = []string{"nats"}

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
		{"child", r.childScenario},
		{"plugin", r.pluginScenario},
		{"shadow", r.shadowScenario},
		{"poll", r.pollScenario},
		{"tty", r.ttyScenario},
		{"backlog", r.backlogScenario},
		{"nats", r.natsScenario},
		{"flood", r.floodScenario},
		{"floodtty", r.floodTTYScenario},
	}
	for _, s := range steps {
		if len(r.cfg.Only) > 0 && !slices.Contains(r.cfg.Only, s.name) {
			continue
		}
		if len(r.cfg.Only) == 0 && slices.Contains(OnRequest, s.name) {
			continue
		}
		if !first && slices.Contains(FirstFilesystemOnly, s.name) {
			// Not a figure of this filesystem: neither run nor, past
			// the budget, counted as skipped (which fails the run).
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

// measure runs a closed loop against the broker b and turns it into a
// LoadRun, with the CPU each side spent per ask. The CPU samples bracket
// the warm-up too, which at a few asks per requester is noise.
func (r *runner) measure(ctx context.Context, b *brokerProc, d *driver, k askKind, requesters, warmup, count int, duration time.Duration) *LoadRun {
	return measureLoop(b, d, requesters, warmup, func() loadResult { return d.closedLoop(ctx, k, requesters, warmup, count, duration) })
}

// measureLoop runs loop, a closed loop of requesters that each made
// warmup asks first, and turns it into a LoadRun with the CPU each side
// spent per ask.
func measureLoop(b *brokerProc, d *driver, requesters, warmup int, loop func() loadResult) *LoadRun {
	before := d.fallbacks.Load()
	b0, berr0 := ReadCPU(b.pid())
	d0, derr0 := ReadCPU(os.Getpid())
	res := loop()
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

// us formats a duration in whole microseconds.
