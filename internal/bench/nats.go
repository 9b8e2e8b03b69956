package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/seed6639df8c/courier/forward"
	"github.com/seed6639df8c/courier/mailbox"
)

// natsPlan sizes the nats scenario from the run's counts: about 35 s at
// DefaultCounts on two cores, a few seconds at QuickCounts.
type natsPlan struct {
	warmup int
	// serial asks of each transport in turn, within serialFor.
	serial    int
	serialFor time.Duration
	// loadFor is each closed loop (1, 8, 32 requesters, each transport).
	loadFor time.Duration
	// clusterSerial and clusterSerialFor are the cluster's round trips.
	clusterSerial    int
	clusterSerialFor time.Duration
	// procs rounds of one `child ask` process over each transport, within
	// procsFor.
	procs    int
	procsFor time.Duration
}

func planNATS(c Counts) natsPlan {
	return natsPlan{
		warmup: c.Warmup, serial: c.Serial, serialFor: c.SerialFor * 3 / 4,
		loadFor:       (c.LoadFor * 2 / 3).Round(time.Millisecond),
		clusterSerial: c.Serial / 2, clusterSerialFor: c.SerialFor / 2,
		procs: max(c.Children*2/5, 4), procsFor: c.ChildrenFor / 2,
	}
}

// clusterNodes is the size of the cluster, and its replicas.
const clusterNodes = 3

// natsScenario: one `broker serve --terminal deny` serving its file inbox
// and, with --nats, an engine this process runs (one node, its store
// under the run's base); the rule-resolved round trip through both
// transports in turn, their rates at 1, 8 and 32 requesters, and real
// `child ask` processes over both; then a three-node cluster. Measured on
// the run's first filesystem only: it is a figure of the transport, and
// the whole run keeps to its five minutes.
func (r *runner) natsScenario(ctx context.Context, fr *FSResult, base string, first bool) error {
	if !first {
		return nil // FirstFilesystemOnly: Run does not call it then
	}
	plan := planNATS(r.cfg.Counts)
	res := &NATSResult{Engine: fmt.Sprintf("embedded NATS JetStream server in the driver's process, loopback, store on %s", fr.FSType)}
	fr.NATS = res
	defer res.computeRatios()
	var errs []error
	if err := r.natsSingle(ctx, fr, res, filepath.Join(base, "single"), plan); err != nil {
		if ctx.Err() != nil {
			return err
		}
		errs = append(errs, err)
	}
	if err := r.natsCluster(ctx, fr, res, filepath.Join(base, "cluster"), plan); err != nil {
		errs = append(errs, fmt.Errorf("cluster: %w", err))
	}
	res.computeRatios()
	r.progress("[%s]   NATS / file: %s", fr.Label, res.ratiosLine())
	return errors.Join(errs...)
}

// natsBroker starts the broker of a NATS phase, serving its file inbox
// and the engine e, with the bench's rules config.
func (r *runner) natsBroker(ctx context.Context, fr *FSResult, base, label string, e *engine, extra ...string) (*brokerProc, brokerSpec, error) {
	cfgPath, err := writeBenchConfig(base)
	if err != nil {
		return nil, brokerSpec{}, err
	}
	spec := brokerSpec{
		Label: fr.Label + "/" + label, Base: base, Session: session, Terminal: "deny", Config: cfgPath,
		Args: append([]string{"--nats", e.url(), "--nats-local"}, extra...),
	}
	if r.cfg.CPUProfileDir != "" {
		spec.CPUProfile = filepath.Join(r.cfg.CPUProfileDir, "broker-"+fr.Label+"-"+label+".pprof")
	}
	b, err := r.start(ctx, spec)
	return b, spec, err
}

// stopBoth stops the broker, then the engine, in that order (a broker
// whose engine went first would wait out its reconnects); each phase
// calls it on every way out.
func stopBoth(b *brokerProc, e *engine) error {
	var errs []error
	if b != nil {
		if _, err := b.stop(30 * time.Second); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(append(errs, e.shutdown())...)
}

// natsSingle is the single-node phase.
func (r *runner) natsSingle(ctx context.Context, fr *FSResult, res *NATSResult, base string, plan natsPlan) (err error) {
	e, err := startEngine(ctx, filepath.Join(base, "engine"))
	if err != nil {
		return err
	}
	var b *brokerProc
	defer func() {
		if serr := stopBoth(b, e); err == nil {
			err = serr
		}
	}()
	b, spec, err := r.natsBroker(ctx, fr, base, "nats", e)
	if err != nil {
		return err
	}
	nc, err := dialNATS(ctx, e.url())
	if err != nil {
		return err
	}
	defer nc.close()
	d := newDriver(spec.root(), session, mailbox.WatchOptions{})
	fc := d.client()
	defer fc.Close()

	r.progress("[%s] nats: rule-resolved round trip, 1 requester, file and NATS in turn, %d asks each (at most %s)", fr.Label, plan.serial, plan.serialFor)
	runs := d.alternate(ctx, []forward.Forwarder{fc, nc.client}, ruleAsk, plan.warmup, plan.serial, plan.serialFor)
	res.File, res.NATS = newLoadRun(runs[0], 0), newLoadRun(runs[1], 0)
	fr.failed("nats: file round trip", res.File)
	fr.failed("nats: NATS round trip", res.NATS)
	r.progress("[%s]   file %s; NATS %s", fr.Label, summaryCell(res.File.Latency), summaryCell(res.NATS.Latency))
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}

	for _, n := range Requesters {
		r.progress("[%s] nats: rule-resolved throughput, %d requesters, file then NATS, %s each", fr.Label, n, plan.loadFor)
		f := measureLoop(b, d, n, 5, func() loadResult { return d.closedLoop(ctx, ruleAsk, n, 5, 0, plan.loadFor) })
		res.FileLoad = append(res.FileLoad, f)
		fr.failed("nats: file throughput", f)
		x := measureLoop(b, d, n, 5, func() loadResult { return d.closedLoopVia(ctx, nc.client, ruleAsk, n, 5, 0, plan.loadFor) })
		res.NATSLoad = append(res.NATSLoad, x)
		fr.failed("nats: NATS throughput", x)
		r.progress("[%s]   file %s", fr.Label, f.brief())
		r.progress("[%s]   NATS %s", fr.Label, x.brief())
		if ctx.Err() != nil {
			return context.Cause(ctx)
		}
	}

	r.progress("[%s] nats: %d rounds of `child ask` over the mailbox and over NATS, in turn (at most %s)", fr.Label, plan.procs, plan.procsFor)
	p, err := r.natsProcesses(ctx, spec, e.url(), plan)
	if p != nil {
		res.Process = p
		r.progress("[%s]   p50: file %s, NATS %s (CPU %dµs / %dµs)", fr.Label, us(p.File.P50), us(p.NATS.P50), p.CPUus["file"], p.CPUus["nats"])
		if p.Failed > 0 {
			fr.Errors = append(fr.Errors, fmt.Sprintf("nats: child processes: %d failed: %s", p.Failed, p.Error))
		}
	}
	return err
}

// natsCluster is the three-node phase: the broker given every node's URL
// and --nats-replicas 3, the requesters connected to a node other than
// the broker's.
func (r *runner) natsCluster(ctx context.Context, fr *FSResult, res *NATSResult, base string, plan natsPlan) (err error) {
	r.progress("[%s] nats: a cluster of %d embedded servers, streams and buckets replicated %d times", fr.Label, clusterNodes, clusterNodes)
	e, err := startCluster(ctx, filepath.Join(base, "engine"), clusterNodes)
	if err != nil {
		return err
	}
	var b *brokerProc
	defer func() {
		if serr := stopBoth(b, e); err == nil {
			err = serr
		}
	}()
	b, spec, err := r.natsBroker(ctx, fr, base, "nats-cluster", e, "--nats-replicas", fmt.Sprint(clusterNodes))
	if err != nil {
		return err
	}
	c := &NATSClusterResult{Nodes: clusterNodes, Replicas: clusterNodes, BrokerNode: e.nodeOf("courier broker " + session)}
	res.Cluster = c
	// The broker picked a node of the list at random; the requesters go
	// to another, so that every ask crosses a route.
	urls := e.urls()
	pick := 0
	for i, name := range e.names {
		if name != c.BrokerNode {
			pick = i
			break
		}
	}
	nc, err := dialNATS(ctx, urls[pick])
	if err != nil {
		return err
	}
	defer nc.close()
	c.ClientNode = e.names[pick]
	c.RequestsLeader = nc.requestsLeader(ctx)
	d := newDriver(spec.root(), session, mailbox.WatchOptions{})
	fc := d.client()
	defer fc.Close()

	r.progress("[%s] nats cluster (broker on %s, requesters on %s, requests led by %s): round trip, file and NATS in turn, %d asks each (at most %s)",
		fr.Label, orUnknown(c.BrokerNode), c.ClientNode, orUnknown(c.RequestsLeader), plan.clusterSerial, plan.clusterSerialFor)
	runs := d.alternate(ctx, []forward.Forwarder{fc, nc.client}, ruleAsk, plan.warmup, plan.clusterSerial, plan.clusterSerialFor)
	c.File, c.NATS = newLoadRun(runs[0], 0), newLoadRun(runs[1], 0)
	fr.failed("nats cluster: file round trip", c.File)
	fr.failed("nats cluster: NATS round trip", c.NATS)
	r.progress("[%s]   file %s; NATS %s", fr.Label, summaryCell(c.File.Latency), summaryCell(c.NATS.Latency))
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	r.progress("[%s] nats cluster: NATS throughput, 8 requesters, %s", fr.Label, plan.loadFor)
	c.NATSLoad8 = measureLoop(b, d, 8, 5, func() loadResult { return d.closedLoopVia(ctx, nc.client, ruleAsk, 8, 5, 0, plan.loadFor) })
	fr.failed("nats cluster: NATS throughput", c.NATSLoad8)
	r.progress("[%s]   NATS %s", fr.Label, c.NATSLoad8.brief())
	return nil
}

// alternate makes asks of kind k from one requester through each
// forwarder in turn, after warmup rounds, for count rounds or until
// within has passed; each forwarder asks as a session of its own, and
// the order is reversed every other round, so that neither always
// follows the other and the machine's drift lands on both alike. It
// stops at the first wrong answer.
func (d *driver) alternate(ctx context.Context, fws []forward.Forwarder, k askKind, warmup, count int, within time.Duration) []loadResult {
	out := make([]loadResult, len(fws))
	for i := range out {
		out[i].Requesters = 1
	}
	var start, deadline time.Time
	for round := range warmup + count {
		if round == warmup {
			start = time.Now()
			deadline = start.Add(within)
		}
		if round > warmup && within > 0 && time.Now().After(deadline) {
			break
		}
		for j := range fws {
			i := j
			if round%2 == 1 {
				i = len(fws) - 1 - j
			}
			lat, err := d.ask(ctx, fws[i], fmt.Sprintf("bench-alternate-%d", i), k)
			if ctx.Err() != nil {
				out[i].FirstErr = context.Cause(ctx)
				return out
			}
			if err != nil {
				out[i].Failed++
				out[i].FirstErr = fmt.Errorf("%s: %w", transportName(i), err)
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

// transportName names the forwarders of alternate's calls here: the
// mailbox first, NATS second.
func transportName(i int) string {
	return []string{"file", "NATS"}[min(i, 1)]
}

// natsProcesses runs `child ask` for the rule-resolved ask over the
// mailbox and over NATS in turn (the order rotating), against the broker
// of spec serving both.
func (r *runner) natsProcesses(ctx context.Context, spec brokerSpec, url string, plan natsPlan) (*NATSProcessResult, error) {
	child := r.bin("child")
	if _, err := os.Stat(r.bin(natsChildBinary)); err != nil {
		return nil, fmt.Errorf("%s: %w (make build makes it)", natsChildBinary, err)
	}
	env := childEnv(filepath.Join(spec.Base, "agent"))
	common := []string{"--parent", spec.Session, "--session", "bench-proc", "--agent", "bench", "--surface", ruleAsk.Surface, "--value", ruleAsk.Value, "--root", spec.root(), "--timeout", askTimeout.String()}
	kinds := []struct {
		name string
		p    process
	}{
		{"file", process{args: append([]string{"ask"}, common...), wantOut: `"kind":"rule"`}},
		{"nats", process{args: append([]string{"ask", "--transport", url, "--nats-local", "--nats-owner", natsOwner}, common...), wantOut: `"kind":"rule"`}},
	}
	res := &NATSProcessResult{CPUus: map[string]int64{}}
	took := map[string][]time.Duration{}
	cpu := map[string][]time.Duration{}
	var firstErr error
	// Warm-up: the page cache of both binaries, the broker, the engine.
	for range max(plan.warmup/10, 1) {
		for _, k := range kinds {
			k.p.run(ctx, child, env)
		}
	}
	deadline := time.Now().Add(plan.procsFor)
	for round := range plan.procs {
		if plan.procsFor > 0 && time.Now().After(deadline) {
			break
		}
		for j := range kinds {
			k := kinds[(round+j)%len(kinds)]
			t, c, err := k.p.run(ctx, child, env)
			if ctx.Err() != nil {
				return res, context.Cause(ctx)
			}
			if err != nil {
				res.Failed++
				if firstErr == nil {
					firstErr = fmt.Errorf("%s: %w", k.name, err)
				}
				continue
			}
			took[k.name] = append(took[k.name], t)
			cpu[k.name] = append(cpu[k.name], c)
		}
	}
	res.File, res.NATS = Summarize(took["file"]), Summarize(took["nats"])
	for name, cs := range cpu {
		res.CPUus[name] = micros(Summarize(cs).P50)
	}
	if firstErr != nil {
		res.Error = firstErr.Error()
	}
	return res, nil
}

// natsChildBinary is the child built with -tags nats, which `child` execs
// for a NATS transport (docs/decisions/0028).
const natsChildBinary = "courier-child-nats"
