package plugins

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/seed6639df8c/courier/reviewlog"
)

func reviewLines(t *testing.T, path string) []map[string]any {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []map[string]any
	for line := range strings.SplitSeq(strings.TrimSpace(string(data)), "\n") {
		if line == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		out = append(out, m)
	}
	return out
}

func TestReviewLogWriter(t *testing.T) {
	path := filepath.Join(t.TempDir(), "review.jsonl")
	log, err := reviewlog.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	w := ReviewLogWriter(log).(*reviewLogWriter)
	now := time.Unix(1000, 0)
	w.now = func() time.Time { return now }
	zl := zerolog.New(w).With().Timestamp().Logger()
	zl.Info().Str("link", "a").Str("plugin", "judge").Msg("authorizer plugin started")
	w.Write([]byte("not json\n"))
	for range logBurst + 50 {
		zl.Info().Str("link", "chatty").Msg("spam")
	}
	zl.Warn().Str("link", "a").Msg("still heard")
	now = now.Add(logRefill)
	zl.Info().Str("link", "chatty").Msg("after the refill")
	if err := log.Close(); err != nil {
		t.Fatal(err)
	}
	lines := reviewLines(t, path)
	first := lines[0]
	if first["event"] != LogEvent || first["link"] != "a" || first["message"] != "authorizer plugin started" || first["level"] != "info" || first["plugin"] != "judge" {
		t.Errorf("first line %v", first)
	}
	if _, ok := first["time"]; ok {
		t.Errorf("zerolog's time kept beside the review timestamp: %v", first)
	}
	if lines[1]["message"] != "not json" {
		t.Errorf("a line that is not JSON: %v", lines[1])
	}
	spam, heard := 0, false
	var last map[string]any
	for _, l := range lines {
		switch l["message"] {
		case "spam":
			spam++
		case "still heard":
			heard = true
		case "after the refill":
			last = l
		}
	}
	if spam != logBurst || !heard {
		t.Errorf("%d spam lines (want the burst, %d), other link heard: %v", spam, logBurst, heard)
	}
	if last == nil || last["droppedBefore"] != float64(50) {
		t.Errorf("the line after the refill %v, want droppedBefore 50", last)
	}
	// No log: nothing, no failure.
	if n, err := ReviewLogWriter(nil).Write([]byte("{}\n")); n != 3 || err != nil {
		t.Errorf("nil log: %d %v", n, err)
	}
}
