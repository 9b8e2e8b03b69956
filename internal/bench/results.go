package bench

import (
	"time"
)

// Results are every figure of one run, as printed and as written to JSON.
type Results struct {
	Started     time.Time   `json:"started"`
	Seconds     float64     `json:"seconds"`
	Command     string      `json:"command"`
	Machine     Machine     `json:"machine"`
	Filesystems []*FSResult `json:"filesystems"`
	Targets     []Target    `json:"targets"`
	Headline    Headline    `json:"headline"`
}

// Machine describes where the run happened.
type Machine struct {
	CPUs      int    `json:"nproc"`
	CPUModel  string `json:"cpu_model"`
	MemTotal  string `json:"mem_total"`
	Kernel    string `json:"kernel"`
	GoVersion string `json:"go_version"`
	// LoadStart and LoadEnd are /proc/loadavg at the start and the end:
	// other processes share the two cores, and the figures move with
	// them.
	LoadStart string `json:"loadavg_start"`
	LoadEnd   string `json:"loadavg_end"`
}

// FSResult holds the figures measured on one filesystem. A figure that
// could not be measured is nil, with the reason in Errors.
type FSResult struct {
	Label  string `json:"label"`
	Dir    string `json:"dir"`
	FSType string `json:"fs_type"`
	// ProjectFS says Dir is on the filesystem of the working directory
	// the run started in (the project's checkout).
	ProjectFS bool `json:"project_filesystem"`

	// Rule is the rule-resolved round trip, one requester.
	Rule *LoadRun `json:"rule_serial"`
	// Parse is what splitting bash into units costs the round trip.
	Parse *ParseResult `json:"bash_parse"`
	// Recreate is the round trip with the inbox as it is and with the
	// inbox a pi child's cleanup removed, in turn.
	Recreate *RecreateResult `json:"recreated_inbox"`
	// Load is the rule-resolved workload at 1, 8 and 32 requesters.
	Load []*LoadRun `json:"rule_load"`
	// Plugin is resolved by one enforcing plugin link.
	Plugin *LoadRun `json:"plugin_serial"`
	// Shadow passes one shadow link and reaches the headless terminal.
	Shadow *LoadRun `json:"shadow_serial"`
	// Poll is the rule-resolved round trip with broker and child both
	// polling at 250 ms (pi's design), one requester; PollLoad at 1, 8 and
	// 32 requesters.
	Poll     *LoadRun   `json:"poll_serial"`
	PollLoad []*LoadRun `json:"poll_load"`
	// PollRatio is Poll's p50 over Rule's p50.
	PollRatio float64 `json:"poll_over_rule_p50"`

	Held *HeldResult `json:"held"`
	// IdleFresh is the broker idle right after it started serving; Idle
	// the same broker idle after the rule-resolved workload.
	IdleFresh *IdleResult    `json:"idle_fresh"`
	Idle      *IdleResult    `json:"idle_after_load"`
	Pending   *PendingResult `json:"pending"`
	Backlog   *BacklogResult `json:"backlog"`
	Children  *ChildResult   `json:"children"`
	// FloodDeny and FloodTTY are a legitimate requester quiet and while
	// another floods, at --terminal deny and at the tty prompt; HeldMiB is
	// the broker's memory with asks of about 1 MiB held at the tty.
	FloodDeny *FloodResult   `json:"flood_deny"`
	FloodTTY  *FloodResult   `json:"flood_tty"`
	HeldMiB   *HeldMiBResult `json:"held_1mib"`
	// NATS is the same broker asked over its file inbox and over a NATS
	// JetStream engine, and a three-node cluster (the run's first
	// filesystem only).
	NATS *NATSResult `json:"nats,omitempty"`

	Errors []string `json:"errors,omitempty"`
}

// LoadRun is one closed-loop run.
type LoadRun struct {
	Requesters int     `json:"requesters"`
	Asks       int     `json:"asks"`
	Seconds    float64 `json:"seconds"`
	AsksPerSec float64 `json:"asks_per_s"`
	Latency    Summary `json:"latency"`
	// Failed asks did not get the expected decision; they are not in
	// Latency.
	Failed int    `json:"failed"`
	Error  string `json:"error,omitempty"`
	// WatchFallbacks counts asks whose answer was awaited by polling
	// because inotify could not be armed.
	WatchFallbacks int64 `json:"watch_fallbacks"`
	// BrokerCPUPerAskUs and DriverCPUPerAskUs are the on-CPU time of the
	// broker process and of this driver (the requesters' side) divided
	// by the asks made: on two cores their sum bounds the rate.
	BrokerCPUPerAskUs int64 `json:"broker_cpu_per_ask_us"`
	DriverCPUPerAskUs int64 `json:"requesters_cpu_per_ask_us"`
}

func newLoadRun(r loadResult, fallbacks int64) *LoadRun {
	lr := &LoadRun{
		Requesters: r.Requesters, Asks: len(r.Latencies), Seconds: r.Elapsed.Seconds(),
		AsksPerSec: r.AsksPerSec(), Latency: Summarize(r.Latencies), Failed: r.Failed,
		WatchFallbacks: fallbacks,
	}
	if err := r.Err(); err != nil {
		lr.Error = err.Error()
	}
	return lr
}

// ParseResult is three rule-resolved round trips made in turn by one
// requester: on a tool surface that neither side parses as bash
// (NoParse), a one-command bash line (One, the rule workload's value) and
// a three-command line (Three). One's p50 minus NoParse's is what the
// bash parser adds, on the child's side and the broker's.
type ParseResult struct {
	NoParse *LoadRun `json:"no_parse"`
	One     *LoadRun `json:"one_command"`
	Three   *LoadRun `json:"three_commands"`
}

// Cost returns the p50 of one-command and three-command asks minus the
// p50 of asks nothing parses, and false when a run failed.
func (p *ParseResult) Cost() (one, three time.Duration, ok bool) {
	if p == nil {
		return 0, 0, false
	}
	for _, lr := range []*LoadRun{p.NoParse, p.One, p.Three} {
		if lr == nil || lr.Failed > 0 || lr.Asks == 0 {
			return 0, 0, false
		}
	}
	base := p.NoParse.Latency.P50
	return p.One.Latency.P50 - base, p.Three.Latency.P50 - base, true
}

// HeldResult is the rule-resolved round trip with and without one ask
// held at the broker's terminal (the tty prompt, where nobody answers).
type HeldResult struct {
	// Baseline is the asks made while nothing was held; the two alternate
	// in rounds, so that drift of the machine's load lands on both.
	Baseline Summary `json:"baseline"`
	Held     Summary `json:"held"`
	// P99Ratio is Held.P99 over Baseline.P99.
	P99Ratio float64 `json:"p99_ratio"`
	Failed   int     `json:"failed"`
}

// FloodResult is the rule-resolved round trip of a legitimate requester
// while nobody else asks (Quiet) and while another requester writes
// requests as fast as it can (Flooded), in alternating rounds.
type FloodResult struct {
	// Terminal is the broker's (deny or tty); FloodKind the flood's asks.
	Terminal  string  `json:"terminal"`
	FloodKind string  `json:"flood_kind"`
	Quiet     Summary `json:"quiet"`
	Flooded   Summary `json:"flooded"`
	// P99DeltaUs is Flooded.P99 minus Quiet.P99, the figure (goal:
	// within 10 ms); the ratios are Flooded over Quiet.
	P99DeltaUs int64   `json:"p99_delta_us"`
	P99Ratio   float64 `json:"p99_ratio"`
	P50Ratio   float64 `json:"p50_ratio"`
	// FloodWritten is how many requests the flooder wrote, in
	// FloodSeconds, at FloodPerSec.
	FloodWritten int     `json:"flood_written"`
	FloodSeconds float64 `json:"flood_seconds"`
	FloodPerSec  float64 `json:"flood_per_s"`
	// DrainSeconds is how long the broker took, after the flooder
	// stopped, to empty its inbox; FloodLeftWaiting (tty) is how many
	// flood requests were still waiting when the flooder gave up.
	DrainSeconds     float64 `json:"drain_seconds"`
	FloodLeftWaiting int     `json:"flood_left_waiting,omitempty"`
	// Failed legitimate asks did not get their rule's answer.
	Failed int `json:"failed"`
}

// HeldMiBResult is a tty broker holding N asks whose payloads are
// PayloadBytes each.
type HeldMiBResult struct {
	N            int     `json:"n"`
	PayloadBytes int     `json:"payload_bytes"`
	DropSeconds  float64 `json:"drop_seconds"`
	// AtTerminalSeconds runs from the first drop until every ask was
	// handed to the terminal.
	AtTerminalSeconds float64 `json:"at_terminal_seconds"`
	Memory            Memory  `json:"memory"`
	StopSeconds       float64 `json:"stop_seconds"`
	Error             string  `json:"error,omitempty"`
}

// IdleResult is an idle broker's CPU and memory.
type IdleResult struct {
	Seconds float64 `json:"seconds"`
	// TicksPercent is utime+stime over the window (10 ms ticks), and
	// ExecPercent the schedstat on-CPU time, both in percent of one core.
	TicksPercent float64 `json:"cpu_ticks_percent"`
	TicksUsed    int64   `json:"cpu_ticks_used"`
	ExecPercent  float64 `json:"cpu_exec_percent"`
	ExecUsedUs   int64   `json:"cpu_exec_used_us"`
	Memory       Memory  `json:"memory"`
}

// PendingResult is a broker holding 10,000 asks at its terminal.
type PendingResult struct {
	N int `json:"n"`
	// What holds them: the tty prompt's queue.
	HeldBy string `json:"held_by"`
	// DropSeconds is writing the requests; AtTerminalSeconds is from the
	// first drop until the broker had handed every one to the terminal.
	DropSeconds       float64 `json:"drop_seconds"`
	AtTerminalSeconds float64 `json:"at_terminal_seconds"`
	Memory            Memory  `json:"memory"`
	// CPU while holding them (the sweep checks each one every second).
	CPUExecPercent float64 `json:"cpu_exec_percent"`
	// StopSeconds is the orderly stop, which answers every one of them
	// "the session ended"; Answered is how many responses it wrote.
	StopSeconds float64 `json:"stop_seconds"`
	Answered    int     `json:"answered_at_stop"`
}

// BacklogResult is a broker started on an inbox that already holds N
// rule-resolved requests.
type BacklogResult struct {
	N int `json:"n"`
	// Seconds runs from starting the broker process to the last response.
	Seconds float64 `json:"seconds"`
	// ReadySeconds is when its heartbeat named it (it may already be
	// answering by then).
	ReadySeconds float64 `json:"ready_seconds"`
	Memory       Memory  `json:"memory_after"`
	// CountedByListing says the driver could get no inotify instance and
	// counted responses by listing the directory every 50 ms.
	CountedByListing bool `json:"counted_by_listing,omitempty"`
}

// Headline is the last line printed, tmpfs figures.
type Headline struct {
	RuleP50us  int64 `json:"rule_p50_us"`
	RuleP99us  int64 `json:"rule_p99_us"`
	PollP50us  int64 `json:"poll_p50_us"`
	Ratio      int64 `json:"ratio"`
	AsksPerSec int64 `json:"asks_per_s_8"`
}

// Target is one of the targets, judged on the tmpfs figures.
type Target struct {
	Name     string  `json:"name"`
	Goal     string  `json:"goal"`
	Measured string  `json:"measured"`
	Value    float64 `json:"value"`
	Met      bool    `json:"met"`
	// Missing is set when the figure could not be measured.
	Missing bool `json:"missing,omitempty"`
}
