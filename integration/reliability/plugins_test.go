package reliability

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"
)

// pluginFaults is point 8: an authorizer link that starts slowly, then
// crashes, hangs, panics, answers garbage or errors, in a loop, while
// rule-resolved asks keep coming. No fault ever allows, and the rules
// answer throughout at their usual pace (they are resolved before the
// chain and never wait for it).
func (s *suite) pluginFaults(t *testing.T) {
	faultAsks := s.scale(30, 600)
	ruleAsks := s.scale(60, 1200)
	r := s.newRig(t)
	r.keepInbox()
	plugin := filepath.Join(s.bin, "testauthz")
	data, err := os.ReadFile(plugin)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	config := fmt.Sprintf(`{
  "permission": {"*": "ask", "bash": {"*": "ask", "git status *": "allow"}},
  "authorizerChain": [
    {"name": "t", "path": %q, "sha256": %q, "timeoutMs": 300, "onFailure": "deny",
     "args": ["--start-delay", "1s", "--stderr-hostile"]}
  ]
}`, plugin, hex.EncodeToString(sum[:]))
	if err := os.WriteFile(r.config, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	b := r.broker(filepath.Join(r.base, "review.jsonl"))
	r.serving(b)

	faults := []string{"crash", "hang", "panic", "invalid", "error", "panic-handler", "stderr-start", "allow", "deny"}
	var (
		mu             sync.Mutex
		faultAllowed   []string
		allowsAllowed  int
		ruleLost       []string
		ruleLatency    []time.Duration
		faultOutcomes  = map[string]int{}
		wg             sync.WaitGroup
		faultSlots     = make(chan struct{}, 4)
		ruleSlots      = make(chan struct{}, 4)
		ruleDone       = make(chan struct{})
		faultsInjected int
	)
	// Rule-resolved asks, throughout.
	go func() {
		defer close(ruleDone)
		var rwg sync.WaitGroup
		for i := range ruleAsks {
			rwg.Add(1)
			ruleSlots <- struct{}{}
			go func() {
				defer rwg.Done()
				defer func() { <-ruleSlots }()
				a := r.ask(t.Context(), fmt.Sprintf("rule%d", i), askAllow)
				mu.Lock()
				defer mu.Unlock()
				ruleLatency = append(ruleLatency, a.took)
				if !expected(a) {
					ruleLost = append(ruleLost, fmt.Sprintf("exit %d %+v %s", a.code, a.out, a.stderr))
				}
			}()
		}
		rwg.Wait()
	}()
	// Faults, from the slow start on.
	for i := range faultAsks {
		value := faults[i%len(faults)]
		if value == "stderr-start" {
			value = "stderr" // hostile stderr mid-call, then allow
		}
		faultsInjected++
		wg.Add(1)
		faultSlots <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-faultSlots }()
			a := r.ask(t.Context(), fmt.Sprintf("fault%d", i), value)
			mu.Lock()
			defer mu.Unlock()
			outcome := fmt.Sprintf("%s→exit%d", value, a.code)
			faultOutcomes[outcome]++
			switch {
			case value == "allow" || value == "stderr":
				if a.out.Approved {
					allowsAllowed++
				}
			case a.out.Approved || a.code == 0:
				faultAllowed = append(faultAllowed, fmt.Sprintf("%s: %+v", value, a.out))
			case a.code != 1 && a.code != 3:
				faultAllowed = append(faultAllowed, fmt.Sprintf("%s: exit %d %s", value, a.code, a.stderr))
			}
		}()
	}
	wg.Wait()
	<-ruleDone
	alive := !b.exited()
	b.stop(t)

	slices.Sort(ruleLatency)
	var outcomes []string
	for k, v := range faultOutcomes {
		outcomes = append(outcomes, fmt.Sprintf("%s:%d", k, v))
	}
	slices.Sort(outcomes)
	figures(t, "faults_injected", faultsInjected, "allowed_by_fault", len(faultAllowed), "plugin_allows_honoured", allowsAllowed,
		"rule_asks", ruleAsks, "rule_lost", len(ruleLost), "rule_p50", ms(percentile(ruleLatency, 0.5)),
		"rule_p99", ms(percentile(ruleLatency, 0.99)), "rule_max", ms(percentile(ruleLatency, 1)), "broker_alive", alive)
	t.Logf("fault outcomes: %v", outcomes)
	if len(faultAllowed) > 0 {
		t.Errorf("a fault allowed or misbehaved: %v", faultAllowed)
	}
	if len(ruleLost) > 0 {
		t.Errorf("%d rule-resolved asks not answered right, e.g. %s", len(ruleLost), ruleLost[0])
	}
	if !alive {
		t.Errorf("the broker died:\n%s", b.stderr)
	}
	// The rules never wait for the chain: even the slowest rule answer
	// stays far below the link's 300 ms timeout times the hung asks.
	if worst := percentile(ruleLatency, 1); worst > 3*time.Second {
		t.Errorf("a rule-resolved ask took %s while the plugin failed", worst)
	}
}
