package bench

import (
	"fmt"
	"strings"
)

// NATSResult is the nats scenario: one broker serving its file inbox and
// a NATS JetStream engine together (issue 21), asked through both in the
// same run, so that the ratios are the transport's and not the machine's
// mood.
type NATSResult struct {
	// Engine says what served the NATS asks.
	Engine string `json:"engine"`
	// File and NATS are the rule-resolved round trip at one requester,
	// the two transports in turn ask by ask (forward.Client with its
	// watch; a long-lived natsforward.Client with its own connection).
	File *LoadRun `json:"file_serial"`
	NATS *LoadRun `json:"nats_serial"`
	// FileLoad and NATSLoad are the rule-resolved closed loops at 1, 8
	// and 32 requesters, one transport after the other at each level.
	// NATS's requesters' CPU includes the engine, which runs in the
	// driver's process.
	FileLoad []*LoadRun `json:"file_load"`
	NATSLoad []*LoadRun `json:"nats_load"`
	// Process is real `child ask` processes over both transports.
	Process *NATSProcessResult `json:"process,omitempty"`
	// Cluster is the same through a three-node cluster.
	Cluster *NATSClusterResult `json:"cluster,omitempty"`
	// Ratios are NATS over the filesystem in the same run, by figure:
	// p50 and p99 of the round trip, asks_per_s_N, process_p50,
	// cluster_p50 and cluster_asks_per_s_8 (the cluster's against the
	// file figures of the same broker, or of the single-node phase for
	// the rate). Absent when either side was not measured cleanly.
	Ratios map[string]float64 `json:"nats_over_file"`
}

// NATSProcessResult is real `child ask` processes for the rule-resolved
// ask, over the mailbox and over NATS (`child ask --transport nats://…`,
// which execs courier-child-nats), in turn; their difference is what a
// NATS child pays per ask: the second exec, the larger binary's start,
// the connection.
type NATSProcessResult struct {
	File  Summary          `json:"child_ask_file"`
	NATS  Summary          `json:"child_ask_nats"`
	CPUus map[string]int64 `json:"cpu_p50_us"`
	// Failed processes are not in the summaries.
	Failed int    `json:"failed"`
	Error  string `json:"error,omitempty"`
}

// NATSClusterResult is the NATS round trip through a cluster of
// embedded servers, the streams and buckets replicated on every node
// (--nats-replicas).
type NATSClusterResult struct {
	Nodes    int `json:"nodes"`
	Replicas int `json:"replicas"`
	// BrokerNode and ClientNode are the nodes the broker's and the
	// requesters' connections reached; RequestsLeader leads the requests
	// stream's replicas.
	BrokerNode     string `json:"broker_node"`
	ClientNode     string `json:"client_node"`
	RequestsLeader string `json:"requests_leader"`
	// File and NATS are the round trip at one requester, in turn on the
	// same broker; NATSLoad8 is NATS at 8 requesters.
	File      *LoadRun `json:"file_serial"`
	NATS      *LoadRun `json:"nats_serial"`
	NATSLoad8 *LoadRun `json:"nats_load_8"`
}

// clean says a run measured something and every ask got its answer.
func clean(lr *LoadRun) bool { return lr != nil && lr.Failed == 0 && lr.Asks > 0 }

func loadAt(runs []*LoadRun, n int) *LoadRun {
	for _, lr := range runs {
		if lr.Requesters == n {
			return lr
		}
	}
	return nil
}

// computeRatios fills Ratios from the figures measured cleanly.
func (n *NATSResult) computeRatios() {
	r := map[string]float64{}
	if clean(n.File) && clean(n.NATS) {
		r["p50"] = Ratio(n.NATS.Latency.P50, n.File.Latency.P50)
		r["p99"] = Ratio(n.NATS.Latency.P99, n.File.Latency.P99)
	}
	for _, k := range Requesters {
		f, x := loadAt(n.FileLoad, k), loadAt(n.NATSLoad, k)
		if clean(f) && clean(x) && f.AsksPerSec > 0 {
			r[fmt.Sprintf("asks_per_s_%d", k)] = x.AsksPerSec / f.AsksPerSec
		}
	}
	if p := n.Process; p != nil && p.Failed == 0 && p.File.N > 0 && p.NATS.N > 0 {
		r["process_p50"] = Ratio(p.NATS.P50, p.File.P50)
	}
	if c := n.Cluster; c != nil {
		if clean(c.File) && clean(c.NATS) {
			r["cluster_p50"] = Ratio(c.NATS.Latency.P50, c.File.Latency.P50)
		}
		if f := loadAt(n.FileLoad, 8); clean(f) && clean(c.NATSLoad8) && f.AsksPerSec > 0 {
			r["cluster_asks_per_s_8"] = c.NATSLoad8.AsksPerSec / f.AsksPerSec
		}
	}
	n.Ratios = r
}

// ratioCell is a ratio of Ratios, or "—" when it was not computed.
func (n *NATSResult) ratioCell(key string) string {
	if v, ok := n.Ratios[key]; ok {
		return fmt.Sprintf("×%.2f", v)
	}
	return na
}

// natsCell applies cell to the NATS figures of fr, "—" when the scenario
// did not run there.
func natsCell(cell func(*NATSResult) string) func(*FSResult) string {
	return func(fr *FSResult) string {
		if fr.NATS == nil {
			return na
		}
		return cell(fr.NATS)
	}
}

func pairCell(file, nats *LoadRun, ratio string) string {
	return "file " + latencyCell(file) + "; NATS " + latencyCell(nats) + "; NATS/file p50 " + ratio
}

func ratePairCell(n *NATSResult, k int) string {
	return "file " + rateCell(loadAt(n.FileLoad, k)) + "; NATS " + rateCell(loadAt(n.NATSLoad, k)) + "; NATS/file " + n.ratioCell(fmt.Sprintf("asks_per_s_%d", k))
}

// natsRows are the nats scenario's lines of the table.
var natsRows = []row{
	{"NATS scenario: the engine", natsCell(func(n *NATSResult) string { return n.Engine })},
	{"rule-resolved round trip, 1 requester, file and NATS in turn on one broker: p50/p90/p99/max µs", natsCell(func(n *NATSResult) string {
		return pairCell(n.File, n.NATS, n.ratioCell("p50")) + ", p99 " + n.ratioCell("p99")
	})},
	{"rule-resolved asks/s, file and NATS, 1 requester", natsCell(func(n *NATSResult) string { return ratePairCell(n, 1) })},
	{"rule-resolved asks/s, file and NATS, 8 requesters", natsCell(func(n *NATSResult) string { return ratePairCell(n, 8) })},
	{"rule-resolved asks/s, file and NATS, 32 requesters", natsCell(func(n *NATSResult) string { return ratePairCell(n, 32) })},
	{"CPU µs per ask at 8 requesters, broker / requesters (NATS: + the engine): file; NATS", natsCell(func(n *NATSResult) string {
		f, x := loadAt(n.FileLoad, 8), loadAt(n.NATSLoad, 8)
		if f == nil || x == nil {
			return na
		}
		return fmt.Sprintf("%d / %d; %d / %d", f.BrokerCPUPerAskUs, f.DriverCPUPerAskUs, x.BrokerCPUPerAskUs, x.DriverCPUPerAskUs)
	})},
	{"real `child ask` process, file / --transport nats:// (execs courier-child-nats): p50/p90/p99/max µs", natsCell(func(n *NATSResult) string {
		p := n.Process
		if p == nil {
			return na
		}
		s := "file " + summaryCell(p.File) + "; NATS " + summaryCell(p.NATS) + "; NATS/file p50 " + n.ratioCell("process_p50")
		if p.Failed > 0 {
			s += fmt.Sprintf(" %d FAILED", p.Failed)
		}
		return s
	})},
	{"  … CPU per process, p50 (user+sys): file / NATS µs", natsCell(func(n *NATSResult) string {
		p := n.Process
		if p == nil || len(p.CPUus) == 0 {
			return na
		}
		return fmt.Sprintf("%d / %d", p.CPUus["file"], p.CPUus["nats"])
	})},
	{"three-node NATS cluster: nodes, replicas, where", natsCell(func(n *NATSResult) string {
		c := n.Cluster
		if c == nil {
			return na
		}
		return fmt.Sprintf("%d nodes, %d replicas; broker on %s, requesters on %s, requests stream led by %s", c.Nodes, c.Replicas, orUnknown(c.BrokerNode), orUnknown(c.ClientNode), orUnknown(c.RequestsLeader))
	})},
	{"  … round trip, 1 requester, file and NATS in turn: p50/p90/p99/max µs", natsCell(func(n *NATSResult) string {
		if n.Cluster == nil {
			return na
		}
		return pairCell(n.Cluster.File, n.Cluster.NATS, n.ratioCell("cluster_p50"))
	})},
	{"  … NATS asks/s, 8 requesters (NATS/file: the single node's file rate)", natsCell(func(n *NATSResult) string {
		if n.Cluster == nil {
			return na
		}
		return rateCell(n.Cluster.NATSLoad8) + "; NATS/file " + n.ratioCell("cluster_asks_per_s_8")
	})},
}

func orUnknown(s string) string {
	if s == "" {
		return "?"
	}
	return s
}

// ratioKeys are the keys of Ratios in the order they are printed.
var ratioKeys = []string{"p50", "p99", "asks_per_s_1", "asks_per_s_8", "asks_per_s_32", "process_p50", "cluster_p50", "cluster_asks_per_s_8"}

// ratiosLine is the ratios as one progress line.
func (n *NATSResult) ratiosLine() string {
	var parts []string
	for _, k := range ratioKeys {
		if v, ok := n.Ratios[k]; ok {
			parts = append(parts, fmt.Sprintf("%s ×%.2f", k, v))
		}
	}
	if len(parts) == 0 {
		return "none measured cleanly"
	}
	return strings.Join(parts, ", ")
}
