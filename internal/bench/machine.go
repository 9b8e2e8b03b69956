package bench

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/seed6639df8c/courier/rules"
)

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
	Flood:    90, FloodLead: 100 * time.Millisecond, FloodFor: time.Second,
	HeldMiB: 100,
}

// writeBenchConfig writes base/rules.json and returns its path: the
// embedded default config plus one allowed tool surface for noParseAsk,
// inserted as the first rule after the default so that nothing else
// changes meaning (key order is meaning).
func writeBenchConfig(base string) (string, error) {
	def := string(rules.DefaultConfigJSON())
	const anchor = `"*": "ask",`
	i := strings.Index(def, anchor)
	if i < 0 {
		return "", errors.New("the bench config: the embedded default config has no default action to anchor the bench rule on")
	}
	i += len(anchor)
	doc := def[:i] + "\n    \"webfetch\": {\"https://example.com/*\": \"allow\"}," + def[i:]
	if err := os.MkdirAll(base, 0o700); err != nil {
		return "", fmt.Errorf("the bench config: %w", err)
	}
	path := filepath.Join(base, "rules.json")
	if err := os.WriteFile(path, []byte(doc), 0o600); err != nil {
		return "", fmt.Errorf("the bench config: %w", err)
	}
	return path, nil
}
