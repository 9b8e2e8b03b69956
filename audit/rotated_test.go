package audit

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/seed6639df8c/courier/reviewlog"
)

// rotatedAt is the clock of the logs these tests write.
var rotatedAt = time.Date(2026, 7, 15, 8, 11, 12, 345e6, time.UTC)

const rotatedAtText = "2026-07-15T08:11:12.345Z"

// floodLog writes one decision, then warnings until the log has rotated
// the given number of times (1 or 2), through reviewlog itself: the review
// finding 8 flood, at a small cap.
func floodLog(t *testing.T, rotations int) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "review.jsonl")
	l, err := reviewlog.Open(path, reviewlog.WithMaxBytes(4096), reviewlog.WithClock(func() time.Time { return rotatedAt }))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if err := l.Write(reviewlog.ForwardedApproved, map[string]any{"requestId": "perm-victim", "approved": true, "decidedBy": map[string]any{"kind": "user", "via": "terminal"}}); err != nil {
		t.Fatal(err)
	}
	markers := 0
	for i := 0; markers < rotations; i++ {
		if i > 10000 {
			t.Fatal("the log never rotated")
		}
		if err := l.Write(reviewlog.ForwardingWarning, map[string]any{"message": fmt.Sprintf("dropped grants %04d %s", i, strings.Repeat("x", 200))}); err != nil {
			t.Fatal(err)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasPrefix(string(data), `{"timestamp":"`+rotatedAtText+`","extension":"courier","stream":"review","event":"`+reviewlog.LogRotated+`"`) && strings.Count(string(data), "\n") == 2 {
			markers++ // the marker and the line that rotated the log
		}
	}
	return path
}

// TestAuditSaysHistoryWasRotatedAway is review finding 8: a flood rotated
// the victim's decision out of the log and its rotation, and `broker
// audit` printed its census with no hint of loss. A rotation marker whose
// predecessor the census did not read now says when history ends.
func TestAuditSaysHistoryWasRotatedAway(t *testing.T) {
	tests := []struct {
		name   string
		census func(t *testing.T) (Report, error)
		lost   bool
	}{
		{
			name: "rotated once: the log and its rotation hold everything",
			census: func(t *testing.T) (Report, error) {
				return CensusFile(floodLog(t, 1))
			},
		},
		{
			name: "rotated twice: the victim's file is gone",
			census: func(t *testing.T) (Report, error) {
				return CensusFile(floodLog(t, 2))
			},
			lost: true,
		},
		{
			name: "the rotation removed by hand",
			census: func(t *testing.T) (Report, error) {
				path := floodLog(t, 1)
				if err := os.Remove(path + reviewlog.RotatedSuffix); err != nil {
					t.Fatal(err)
				}
				return CensusFile(path)
			},
			lost: true,
		},
		{
			name: "the rotation and the log on stdin, in order",
			census: func(t *testing.T) (Report, error) {
				path := floodLog(t, 1)
				return Census(strings.NewReader(readAll(t, path+reviewlog.RotatedSuffix) + readAll(t, path)))
			},
		},
		{
			name: "the log alone on stdin",
			census: func(t *testing.T) (Report, error) {
				return Census(strings.NewReader(readAll(t, floodLog(t, 1))))
			},
			lost: true,
		},
		{
			name: "a rotation cut short is not the file the marker followed",
			census: func(t *testing.T) (Report, error) {
				path := floodLog(t, 1)
				rotated := readAll(t, path+reviewlog.RotatedSuffix)
				return Census(strings.NewReader(rotated[len(rotated)/2:] + readAll(t, path)))
			},
			lost: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := tt.census(t)
			if err != nil {
				t.Fatal(err)
			}
			var table, js strings.Builder
			if err := r.WriteTable(&table); err != nil {
				t.Fatal(err)
			}
			if err := r.WriteJSON(&js); err != nil {
				t.Fatal(err)
			}
			var report map[string]any
			if err := json.Unmarshal([]byte(js.String()), &report); err != nil {
				t.Fatal(err)
			}
			lost, _ := report["rotatedAway"].([]any)
			says := strings.Contains(table.String(), "history before "+rotatedAtText+" rotated away")
			if tt.lost != says || tt.lost != (len(lost) == 1) {
				t.Fatalf("lost %v, but the table says:\n%s\nand the JSON:\n%s", tt.lost, table.String(), js.String())
			}
			if tt.lost {
				gap, _ := lost[0].(map[string]any)
				if gap["before"] != rotatedAtText || gap["previousSize"] == nil || gap["line"] == nil {
					t.Errorf("the JSON's gap: %v", gap)
				}
			}
		})
	}
}

func readAll(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}
