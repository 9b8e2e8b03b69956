package bench

import (
	"bytes"
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"
)

func fakeRun(requesters int, p50, p99 time.Duration, rate float64) *LoadRun {
	return &LoadRun{Requesters: requesters, Asks: 100, AsksPerSec: rate, Latency: Summary{N: 100, P50: p50, P90: p50, P99: p99, Max: p99}}
}

func sampleResults() *Results {
	fr := &FSResult{
		Label: "tmpfs", FSType: "tmpfs", Dir: "/dev/shm",
		Rule: fakeRun(1, 400*time.Microsecond, 900*time.Microsecond, 2400),
		Parse: &ParseResult{
			NoParse: fakeRun(1, 380*time.Microsecond, 900*time.Microsecond, 2500),
			One:     fakeRun(1, 400*time.Microsecond, 900*time.Microsecond, 2400),
			Three:   fakeRun(1, 420*time.Microsecond, 900*time.Microsecond, 2300),
		},
		Recreate: &RecreateResult{
			Steady:    fakeRun(1, 400*time.Microsecond, 900*time.Microsecond, 2400),
			Recreated: fakeRun(1, 450*time.Microsecond, 1500*time.Microsecond, 2000),
		},
		Load:      []*LoadRun{fakeRun(1, 400*time.Microsecond, 900*time.Microsecond, 2400), fakeRun(8, time.Millisecond, 3*time.Millisecond, 4100), fakeRun(32, 5*time.Millisecond, 9*time.Millisecond, 4200)},
		Plugin:    fakeRun(1, 1400*time.Microsecond, 2*time.Millisecond, 700),
		Shadow:    fakeRun(1, 600*time.Microsecond, 2*time.Millisecond, 1500),
		Poll:      fakeRun(1, 250*time.Millisecond, 490*time.Millisecond, 4),
		Held:      &HeldResult{Baseline: Summary{N: 10, P99: time.Millisecond}, Held: Summary{N: 10, P99: 1300 * time.Microsecond}, P99Ratio: 1.3},
		IdleFresh: &IdleResult{ExecPercent: 0.05, TicksPercent: 0},
		Idle:      &IdleResult{ExecPercent: 0.15, TicksPercent: 0.1},
		Pending:   &PendingResult{N: 10000, Memory: Memory{RSS: 70 << 10, HWM: 71 << 10}},
		Backlog:   &BacklogResult{N: 10000, Seconds: 2.5},
		Children: &ChildResult{
			Ask:  Summary{N: 100, P50: 4500 * time.Microsecond},
			Hook: Summary{N: 100, P50: 6 * time.Millisecond},
			Noop: Summary{N: 100, P50: 3 * time.Millisecond},
		},
		FloodDeny: &FloodResult{Quiet: Summary{N: 100, P99: 2 * time.Millisecond}, Flooded: Summary{N: 100, P99: 9 * time.Millisecond}, P99Ratio: 4.5},
		FloodTTY:  &FloodResult{Quiet: Summary{N: 100, P99: 2 * time.Millisecond}, Flooded: Summary{N: 100, P99: 40 * time.Millisecond}, P99Ratio: 20},
		HeldMiB:   &HeldMiBResult{N: 3000, Memory: Memory{RSS: 100 << 10}},
		NATS:      natsSample(),
	}
	fr.PollRatio = Ratio(fr.Poll.Latency.P50, fr.Rule.Latency.P50)
	disk := &FSResult{Label: "disk", FSType: "ext4", Dir: "/tmp", Rule: fakeRun(1, 3*time.Millisecond, 9*time.Millisecond, 300)}
	res := &Results{Filesystems: []*FSResult{fr, disk}}
	res.judge()
	return res
}

func TestHeadlineIsTheTmpfsFigures(t *testing.T) {
	res := sampleResults()
	const want = "headline: rule_p50_us=400 rule_p99_us=900 poll_p50_us=250000 ratio=625 asks_per_s_8=4100"
	if got := res.Headline.String(); got != want {
		t.Errorf("headline = %q, want %q", got, want)
	}
}

func TestJudge(t *testing.T) {
	res := sampleResults()
	want := map[string]bool{
		"rule-resolved p50": true, "rule-resolved p99": true, "poll p50 / rule p50": true,
		"bash parse cost (one command − tool surface, p50)": true, // +20 µs
		"after a pi child's cleanup: p99 − steady p99":      true, // +600 µs, steady p90 as the rule's
		"asks/s at 8 requesters":                            true, "plugin-resolved p50": true,
		"p99 with one ask held / without":                              false, // 1.3× > 1.2×
		"idle CPU, fresh broker":                                       true,
		"idle CPU, after serving":                                      false, // 0.15 %
		"RSS with 10,000 pending":                                      false, // 70 MiB
		"10,000 backlog served":                                        true,
		"legitimate p99 while another floods − quiet, --terminal deny": true,  // +7 ms
		"legitimate p99 while another floods − quiet, tty":             false, // +38 ms
		"RSS with 3,000 held 1 MiB asks":                               true,  // 100 MiB
		"child ask own work (p50 − nothing's p50)":                     true,  // 1.5 ms
		"child hook own work (p50 − nothing's p50)":                    false, // 3 ms
	}
	if len(res.Targets) != len(want) {
		t.Fatalf("%d targets, want %d", len(res.Targets), len(want))
	}
	for _, tg := range res.Targets {
		if tg.Missing {
			t.Errorf("%s: missing", tg.Name)
		}
		if tg.Met != want[tg.Name] {
			t.Errorf("%s: met = %v, want %v (measured %s)", tg.Name, tg.Met, want[tg.Name], tg.Measured)
		}
	}
}

// The child processes' targets are not judged when a process failed,
// or when the program that does nothing was not measured: a child that
// fails fast must never pass for a fast one.
func TestJudgeChildren(t *testing.T) {
	for name, mutate := range map[string]func(*ChildResult){
		"a process failed":   func(c *ChildResult) { c.Failed = 1 },
		"no noop figure":     func(c *ChildResult) { c.Noop = Summary{} },
		"no child processes": nil,
	} {
		t.Run(name, func(t *testing.T) {
			res := sampleResults()
			if mutate == nil {
				res.Filesystems[0].Children = nil
			} else {
				mutate(res.Filesystems[0].Children)
			}
			res.judge()
			for _, tg := range res.Targets {
				if strings.HasPrefix(tg.Name, "child ") && (!tg.Missing || tg.Met) {
					t.Errorf("%s: %+v, want missing and not met", tg.Name, tg)
				}
			}
		})
	}
}

// A figure whose asks failed is not judged: fast failures must never
// pass for fast answers.
func TestJudgeRefusesFailedRuns(t *testing.T) {
	res := sampleResults()
	res.Filesystems[0].Rule.Failed = 3
	res.Filesystems[0].Plugin = nil
	res.judge()
	for _, tg := range res.Targets {
		switch tg.Name {
		case "rule-resolved p50", "rule-resolved p99", "poll p50 / rule p50", "plugin-resolved p50":
			if !tg.Missing || tg.Met {
				t.Errorf("%s: %+v, want missing and not met", tg.Name, tg)
			}
		}
	}
}

func TestTableEndsWithHeadline(t *testing.T) {
	var buf bytes.Buffer
	if err := sampleResults().WriteTable(&buf); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimRight(buf.String(), "\n"), "\n")
	last := lines[len(lines)-1]
	if !regexp.MustCompile(`^headline: rule_p50_us=\d+ rule_p99_us=\d+ poll_p50_us=\d+ ratio=\d+ asks_per_s_8=\d+$`).MatchString(last) {
		t.Errorf("last line = %q", last)
	}
	out := buf.String()
	for _, want := range []string{"tmpfs (tmpfs, /dev/shm)", "disk (ext4, /tmp)", "400 / 400 / 900 / 900 [n=100]", "MISSED", "625×", "NATS/file p50 ×2.50, p99 ×2.50"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
}

func TestJSONCarriesTheHeadline(t *testing.T) {
	var buf bytes.Buffer
	if err := sampleResults().WriteJSON(&buf); err != nil {
		t.Fatal(err)
	}
	var back struct {
		Headline    Headline `json:"headline"`
		Filesystems []struct {
			Label string `json:"label"`
			Rule  struct {
				Latency struct {
					P50 int64 `json:"p50_us"`
				} `json:"latency"`
			} `json:"rule_serial"`
			NATS *struct {
				Serial struct {
					Latency struct {
						P50 int64 `json:"p50_us"`
					} `json:"latency"`
				} `json:"nats_serial"`
				Ratios map[string]float64 `json:"nats_over_file"`
			} `json:"nats"`
		} `json:"filesystems"`
	}
	if err := json.Unmarshal(buf.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	if back.Headline.RuleP50us != 400 || back.Headline.AsksPerSec != 4100 || len(back.Filesystems) != 2 || back.Filesystems[0].Rule.Latency.P50 != 400 {
		t.Errorf("round trip of the JSON = %+v", back)
	}
	if n := back.Filesystems[0].NATS; n == nil || n.Serial.Latency.P50 != 1250 || n.Ratios["p50"] != 2.5 {
		t.Errorf("the NATS figures in the JSON = %+v", n)
	}
	if back.Filesystems[1].NATS != nil {
		t.Errorf("the disk, where nats did not run, has NATS figures: %+v", back.Filesystems[1].NATS)
	}
}

func TestNoTmpfsMeansNothingMeasured(t *testing.T) {
	res := &Results{Filesystems: []*FSResult{{Label: "disk"}}}
	res.judge()
	for _, tg := range res.Targets {
		if !tg.Missing {
			t.Errorf("%s judged without tmpfs figures", tg.Name)
		}
	}
	if res.Headline != (Headline{}) {
		t.Errorf("headline = %+v", res.Headline)
	}
}

// A smaller run (--quick) holds fewer than 10,000 asks: its memory and
// backlog figures are shown but never judged against the 10,000 targets.
func TestSmallRunsAreNotJudgedAgainstTenThousand(t *testing.T) {
	res := sampleResults()
	fr := res.Filesystems[0]
	fr.Pending = &PendingResult{N: 500, Memory: Memory{RSS: 1 << 10}}
	fr.Backlog = &BacklogResult{N: 500, Seconds: 0.1}
	res.judge()
	for _, tg := range res.Targets {
		if tg.Name == "RSS with 10,000 pending" || tg.Name == "10,000 backlog served" {
			if !tg.Missing || tg.Met {
				t.Errorf("%s judged on 500: %+v", tg.Name, tg)
			}
		}
	}
}

func TestJudgeParseCost(t *testing.T) {
	res := sampleResults()
	res.Filesystems[0].Parse.NoParse = fakeRun(1, 340*time.Microsecond, 900*time.Microsecond, 2500) // +60 µs
	res.judge()
	for _, tg := range res.Targets {
		if strings.HasPrefix(tg.Name, "bash parse cost") && (tg.Met || tg.Measured != "+60 µs") {
			t.Errorf("%s: met %v, measured %q", tg.Name, tg.Met, tg.Measured)
		}
	}
}

// The old watcher slowed the ask after a recreated inbox too: a p99
// difference between two slow runs is not a met target.
func TestJudgeRecreatedNeedsASteadyInbox(t *testing.T) {
	res := sampleResults()
	fr := res.Filesystems[0]
	fr.Recreate = &RecreateResult{
		Steady:    fakeRun(1, 700*time.Microsecond, 252*time.Millisecond, 4),
		Recreated: fakeRun(1, 251*time.Millisecond, 253*time.Millisecond, 4),
	}
	fr.Recreate.Steady.Latency.P90 = 251 * time.Millisecond
	res.judge()
	for _, tg := range res.Targets {
		if tg.Name == "after a pi child's cleanup: p99 − steady p99" && (tg.Met || tg.Missing) {
			t.Errorf("%+v: want measured and missed", tg)
		}
	}
}
