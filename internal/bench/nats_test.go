package bench

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/seed6639df8c/courier/decision"
	"github.com/seed6639df8c/courier/forward"
	"github.com/seed6639df8c/courier/mailbox"
	"github.com/seed6639df8c/courier/natsbox"
	"github.com/seed6639df8c/courier/provenance"
	"github.com/seed6639df8c/courier/wire"
)

// fakeForwarder answers every ask at once with answer, and records the
// order the forwarders were called in.
type fakeForwarder struct {
	id     int
	answer decision.Decision
	mu     *sync.Mutex
	calls  *[]int
}

func (f fakeForwarder) Forward(_ context.Context, _ wire.Request) decision.Decision {
	f.mu.Lock()
	*f.calls = append(*f.calls, f.id)
	f.mu.Unlock()
	return f.answer
}

var ruleAllow = decision.Allow(provenance.Rule{Surface: "bash"})

// Both transports are asked in every round, the order reversed every
// other round so that neither always follows the other; warm-up rounds
// are not measured; a wrong answer stops the run and names the transport.
func TestAlternate(t *testing.T) {
	for _, tc := range []struct {
		name      string
		natsGives decision.Decision
		wantCalls []int
		wantN     [2]int
		wantErr   string
	}{
		{
			name: "both answer", natsGives: ruleAllow,
			wantCalls: []int{0, 1, 1, 0, 0, 1, 1, 0, 0, 1}, wantN: [2]int{3, 3},
		},
		{
			name: "NATS unavailable", natsGives: decision.NobodyAnswered("nobody"),
			wantCalls: []int{0, 1}, wantN: [2]int{0, 0}, wantErr: "NATS: rule ask",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var mu sync.Mutex
			var calls []int
			fws := []fakeForwarder{{0, ruleAllow, &mu, &calls}, {1, tc.natsGives, &mu, &calls}}
			d := newDriver(t.TempDir(), session, mailbox.WatchOptions{})
			out := d.alternate(t.Context(), []forward.Forwarder{fws[0], fws[1]}, ruleAsk, 2, 3, time.Minute)
			if !slices.Equal(calls, tc.wantCalls) {
				t.Errorf("calls = %v, want %v", calls, tc.wantCalls)
			}
			for i, r := range out {
				if len(r.Latencies) != tc.wantN[i] {
					t.Errorf("transport %d: %d latencies, want %d", i, len(r.Latencies), tc.wantN[i])
				}
			}
			err := out[1].Err()
			switch {
			case tc.wantErr == "" && err != nil:
				t.Errorf("NATS side failed: %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr) || out[1].Failed != 1):
				t.Errorf("NATS side: failed %d, err %v; want one failure naming %q", out[1].Failed, err, tc.wantErr)
			}
		})
	}
}

func natsSample() *NATSResult {
	n := &NATSResult{
		Engine: "embedded",
		File:   fakeRun(1, 500*time.Microsecond, 2*time.Millisecond, 1500),
		NATS:   fakeRun(1, 1250*time.Microsecond, 5*time.Millisecond, 600),
		FileLoad: []*LoadRun{
			fakeRun(1, 500*time.Microsecond, 2*time.Millisecond, 2000),
			fakeRun(8, 2*time.Millisecond, 6*time.Millisecond, 4000),
			fakeRun(32, 6*time.Millisecond, 20*time.Millisecond, 4500),
		},
		NATSLoad: []*LoadRun{
			fakeRun(1, 1250*time.Microsecond, 5*time.Millisecond, 800),
			fakeRun(8, 7*time.Millisecond, 14*time.Millisecond, 1000),
			fakeRun(32, 28*time.Millisecond, 40*time.Millisecond, 1125),
		},
		Process: &NATSProcessResult{File: Summary{N: 40, P50: 4 * time.Millisecond}, NATS: Summary{N: 40, P50: 10 * time.Millisecond}},
		Cluster: &NATSClusterResult{
			Nodes: 3, Replicas: 3, BrokerNode: "n2", ClientNode: "n1", RequestsLeader: "n3",
			File: fakeRun(1, 600*time.Microsecond, 2*time.Millisecond, 1000), NATS: fakeRun(1, 1800*time.Microsecond, 6*time.Millisecond, 400),
			NATSLoad8: fakeRun(8, 10*time.Millisecond, 20*time.Millisecond, 800),
		},
	}
	n.computeRatios()
	return n
}

// The ratios are NATS over the file figures of the same run, and a side
// that failed or was not measured gives no ratio: a fast failure must
// never pass for a fast transport.
func TestNATSRatios(t *testing.T) {
	all := map[string]float64{
		"p50": 2.5, "p99": 2.5, "asks_per_s_1": 0.4, "asks_per_s_8": 0.25, "asks_per_s_32": 0.25,
		"process_p50": 2.5, "cluster_p50": 3, "cluster_asks_per_s_8": 0.2,
	}
	for _, tc := range []struct {
		name    string
		mutate  func(*NATSResult)
		missing []string
	}{
		{"all measured", func(*NATSResult) {}, nil},
		{"a failed NATS ask", func(n *NATSResult) { n.NATS.Failed = 1 }, []string{"p50", "p99"}},
		{"no file rate at 8", func(n *NATSResult) { n.FileLoad = n.FileLoad[:1] }, []string{"asks_per_s_8", "asks_per_s_32", "cluster_asks_per_s_8"}},
		{"a failed process", func(n *NATSResult) { n.Process.Failed = 1 }, []string{"process_p50"}},
		{"no cluster", func(n *NATSResult) { n.Cluster = nil }, []string{"cluster_p50", "cluster_asks_per_s_8"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := natsSample()
			tc.mutate(n)
			n.computeRatios()
			for key, want := range all {
				got, ok := n.Ratios[key]
				switch {
				case slices.Contains(tc.missing, key) && ok:
					t.Errorf("%s = %.2f, want no ratio", key, got)
				case !slices.Contains(tc.missing, key) && (!ok || got < want-0.001 || got > want+0.001):
					t.Errorf("%s = %.3f (present %v), want %.3f", key, got, ok, want)
				}
			}
		})
	}
}

// The table shows the NATS figures beside the file ones, with the
// ratios, and a dash where the scenario did not run.
func TestNATSRows(t *testing.T) {
	with := &FSResult{NATS: natsSample()}
	without := &FSResult{}
	var b strings.Builder
	for _, r := range natsRows {
		if got := r.cell(without); got != na {
			t.Errorf("%q without the scenario = %q, want %q", r.name, got, na)
		}
		b.WriteString(r.cell(with) + "\n")
	}
	if got, want := with.NATS.ratiosLine(), "p50 ×2.50, p99 ×2.50, asks_per_s_1 ×0.40, asks_per_s_8 ×0.25"; !strings.HasPrefix(got, want) {
		t.Errorf("ratiosLine = %q, want it to start %q", got, want)
	}
	out := b.String()
	for _, want := range []string{
		"file 500 / 500 / 2000 / 2000 [n=100]; NATS 1250 / 1250 / 5000 / 5000 [n=100]; NATS/file p50 ×2.50, p99 ×2.50",
		"file 4000 (p50 2000, p99 6000) [n=100]; NATS 1000 (p50 7000, p99 14000) [n=100]; NATS/file ×0.25",
		"NATS/file p50 ×2.50", "broker on n2, requesters on n1, requests stream led by n3", "NATS/file p50 ×3.00", "NATS/file ×0.20",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("NATS rows lack %q:\n%s", want, out)
		}
	}
}

// The scenario keeps to its share of the run's five minutes.
func TestNATSPlanKeepsItsShare(t *testing.T) {
	for _, tc := range []struct {
		name   string
		counts Counts
		within time.Duration
	}{{"default", DefaultCounts, 40 * time.Second}, {"quick", QuickCounts, 12 * time.Second}} {
		p := planNATS(tc.counts)
		// The capped runs; engine and broker start-ups come on top, a
		// few seconds.
		total := p.serialFor + 2*time.Duration(len(Requesters))*p.loadFor + p.procsFor + p.clusterSerialFor + p.loadFor
		if total > tc.within-5*time.Second {
			t.Errorf("%s: the capped runs take %s, more than %s less 5 s of start-ups", tc.name, total, tc.within)
		}
		if p.serial == 0 || p.clusterSerial == 0 || p.procs == 0 || p.loadFor == 0 {
			t.Errorf("%s: %+v measures nothing somewhere", tc.name, p)
		}
	}
}

// A cluster forms on loopback, its nodes answer JetStream, and nodeOf
// finds the node a named connection reached: what places the requesters
// on another node than the broker's.
func TestClusterNamesTheNodeOfAConnection(t *testing.T) {
	if testing.Short() {
		t.Skip("starts three servers")
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*engineWait)
	defer cancel()
	e, err := startCluster(ctx, t.TempDir(), 3)
	if err != nil {
		t.Fatal(err)
	}
	defer e.shutdown()
	urls := e.urls()
	if len(urls) != 3 || strings.Count(e.url(), ",") != 2 {
		t.Fatalf("urls = %v, url = %q", urls, e.url())
	}
	nc, err := natsbox.Connect(ctx, natsbox.Options{URL: urls[1], Local: true, Name: "probe-of-test"})
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	if got := e.nodeOf("probe-of-test"); got != "n2" {
		t.Errorf("nodeOf = %q, want n2", got)
	}
	if got := e.nodeOf("nobody"); got != "" {
		t.Errorf("nodeOf(nobody) = %q, want \"\"", got)
	}
	nc.Close()
	if err := e.shutdown(); err != nil {
		t.Fatal(err)
	}
	if err := e.shutdown(); err != nil {
		t.Errorf("a second shutdown: %v", err)
	}
}

// A child process over the mailbox stays on the mailbox whatever the
// operator's environment says: the transport is a flag of its own.
func TestChildEnvDropsTheTransport(t *testing.T) {
	t.Setenv("COURIER_TRANSPORT", "nats://127.0.0.1:4222")
	t.Setenv("COURIER_NATS_OWNER", "someone")
	t.Setenv("COURIER_NATS_LOCAL", "1")
	for _, kv := range childEnv("/nonexistent/agent") {
		if strings.HasPrefix(kv, "COURIER_TRANSPORT=") || strings.HasPrefix(kv, "COURIER_NATS_") {
			t.Errorf("a child's environment keeps %s", kv)
		}
	}
}
