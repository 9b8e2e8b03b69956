package reviewlog

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// seqEntry is a line that says which writer wrote it and its number.
func seqEntry(writer, n int) ForwardingWarningEntry {
	return ForwardingWarningEntry{Message: fmt.Sprintf("writer %d line %06d", writer, n), RequestID: Str("perm-" + strconv.Itoa(n))}
}

// linesOf reads a log file's lines, failing on one that is not a whole
// JSON object: writers never interleave within a line.
func linesOf(t *testing.T, path string) []map[string]any {
	t.Helper()
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var out []map[string]any
	for i, line := range strings.Split(strings.TrimSuffix(string(data), "\n"), "\n") {
		if line == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("%s line %d is not a JSON object: %q", path, i+1, line)
		}
		out = append(out, m)
	}
	return out
}

func size(t *testing.T, path string) int64 {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

// A flood of lines keeps the log under its cap: the file and its one
// rotation, never more, and the newest lines are kept (issue 14: a
// 100,000-request flood grew the log to 107 MB).
func TestLogRotatesAtItsCap(t *testing.T) {
	const max = 4096
	l, path := openTemp(t, WithMaxBytes(max))
	const n = 1000
	for i := range n {
		if err := l.Emit(seqEntry(0, i)); err != nil {
			t.Fatalf("line %d: %v", i, err)
		}
	}
	cur, rotated := size(t, path), size(t, path+RotatedSuffix)
	if cur > max || rotated > max || rotated < max/2 {
		t.Errorf("log %d bytes and rotation %d, want each at most %d (and the rotation a full file)", cur, rotated, max)
	}
	matches, _ := filepath.Glob(path + "*")
	if len(matches) != 2 {
		t.Errorf("files %v, want the log and one rotation", matches)
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
		t.Errorf("the new log is %v, want 0600", fi.Mode())
	}
	// The newest lines, in order, across the rotation and the log.
	all := withoutMarkers(append(linesOf(t, path+RotatedSuffix), linesOf(t, path)...))
	for i, m := range all {
		want := fmt.Sprintf("writer 0 line %06d", n-len(all)+i)
		if m["message"] != want {
			t.Fatalf("line %d of what is kept is %v, want %q", i, m["message"], want)
		}
	}
}

// Several processes appending to one log rotate it once per cap between
// them: no line torn, none lost to a second rename of a fresh file over
// the rotation, and both files under the cap plus a line or so.
func TestLogRotationAcrossWriters(t *testing.T) {
	const max = 8192
	path := filepath.Join(t.TempDir(), "review.jsonl")
	const writers, n = 4, 400
	logs := make([]*Log, writers)
	for i := range logs {
		// Each Open is what another process holds: a descriptor and a
		// lock of its own.
		l, err := Open(path, WithMaxBytes(max), WithClock(fixedClock))
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		logs[i] = l
	}
	var wg sync.WaitGroup
	for w, l := range logs {
		wg.Go(func() {
			for i := range n {
				if err := l.Emit(seqEntry(w, i)); err != nil {
					t.Errorf("writer %d line %d: %v", w, i, err)
					return
				}
			}
		})
	}
	wg.Wait()
	line := int64(len(`{"timestamp":"2026-07-15T08:11:12.345Z","extension":"courier","stream":"review","event":"permission_forwarding.warning","message":"writer 0 line 000000","requestId":"perm-000"}`) + 1)
	cur, rotated := size(t, path), size(t, path+RotatedSuffix)
	if cur > max+writers*line || rotated > max+writers*line {
		t.Errorf("log %d bytes, rotation %d: want each near the cap %d", cur, rotated, max)
	}
	if rotated < max/2 {
		t.Errorf("the rotation holds %d bytes: a fresh log was renamed over a full one", rotated)
	}
}

// Writers taking turns (a broker and a child, one line each) each follow
// the other's rotation at once: what the two files keep is the newest
// lines, in the order they were written, none missing in between.
func TestLogRotationWritersTakingTurns(t *testing.T) {
	const max = 4096
	path := filepath.Join(t.TempDir(), "review.jsonl")
	var logs [2]*Log
	for i := range logs {
		l, err := Open(path, WithMaxBytes(max), WithClock(fixedClock))
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		logs[i] = l
	}
	const n = 500
	for i := range n {
		if err := logs[i%2].Emit(seqEntry(i%2, i)); err != nil {
			t.Fatal(err)
		}
	}
	all := withoutMarkers(append(linesOf(t, path+RotatedSuffix), linesOf(t, path)...))
	if len(all) < max/200 {
		t.Fatalf("only %d lines kept", len(all))
	}
	for i, m := range all {
		k := n - len(all) + i
		if want := fmt.Sprintf("writer %d line %06d", k%2, k); m["message"] != want {
			t.Fatalf("line %d of what is kept is %v, want %q", i, m["message"], want)
		}
	}
}

// A log an operator removed is started again; a cap of 0 never rotates.
func TestLogReopensARemovedFileAndZeroNeverRotates(t *testing.T) {
	l, path := openTemp(t, WithMaxBytes(1<<20))
	if err := l.Emit(seqEntry(0, 1)); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if err := l.Emit(seqEntry(0, 2)); err != nil {
		t.Fatal(err)
	}
	if got := linesOf(t, path); len(got) != 1 || got[0]["message"] != "writer 0 line 000002" {
		t.Errorf("the log after its removal holds %v", got)
	}

	never, neverPath := openTemp(t, WithMaxBytes(0))
	for i := range 200 {
		if err := never.Emit(seqEntry(0, i)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := os.Stat(neverPath + RotatedSuffix); !errors.Is(err, os.ErrNotExist) || len(linesOf(t, neverPath)) != 200 {
		t.Errorf("a log that never rotates rotated: %v", err)
	}
	if _, err := Open(filepath.Join(t.TempDir(), "x.jsonl"), WithMaxBytes(-1)); err == nil {
		t.Error("a negative cap was accepted")
	}
}

// A rotation that fails is reported, the line is written anyway, and the
// failure is not reported again on every line.
func TestLogRotationFailureIsReportedOnce(t *testing.T) {
	const max = 2048
	l, path := openTemp(t, WithMaxBytes(max))
	// A non-empty directory where the rotation goes: rename cannot
	// replace it.
	if err := os.MkdirAll(filepath.Join(path+RotatedSuffix, "x"), 0o700); err != nil {
		t.Fatal(err)
	}
	var failures int
	for i := range 60 {
		err := l.Emit(seqEntry(0, i))
		if err != nil {
			if !strings.Contains(err.Error(), "written, but the log was not rotated") {
				t.Fatalf("line %d: %v", i, err)
			}
			failures++
		}
	}
	if got := len(linesOf(t, path)); got != 60 {
		t.Errorf("%d lines written, want all 60", got)
	}
	if failures != 1 {
		t.Errorf("%d failures reported for 60 lines", failures)
	}
}

// BenchmarkWriteFile measures a decision's line to a real file, with the
// size cap's check (an lstat a line) and without it.
func BenchmarkWriteFile(b *testing.B) {
	for _, bc := range []struct {
		name string
		max  int64
	}{{"capped", DefaultMaxBytes}, {"uncapped", 0}} {
		b.Run(bc.name, func(b *testing.B) {
			l, err := Open(filepath.Join(b.TempDir(), "review.jsonl"), WithMaxBytes(bc.max))
			if err != nil {
				b.Fatal(err)
			}
			defer l.Close()
			e := approvedEntry()
			for b.Loop() {
				if err := l.Emit(e); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// A rotation starts the new file with a marker line, review_log_rotated,
// saying when and how large the file rotated away was, so that a reader
// who finds a marker whose predecessor it cannot read knows history is
// missing (review finding 8: a flood rotated decisions away without a
// trace, and broker audit reported a short census as a whole one).
func TestRotationStartsTheNewFileWithAMarker(t *testing.T) {
	const max = 4096
	l, path := openTemp(t, WithMaxBytes(max))
	for i := 0; ; i++ {
		if err := l.Emit(seqEntry(0, i)); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(path + RotatedSuffix); err == nil {
			break
		}
		if i > 1000 {
			t.Fatal("the log never rotated")
		}
	}
	rotated, cur := linesOf(t, path+RotatedSuffix), linesOf(t, path)
	if len(cur) != 2 {
		t.Fatalf("the new log holds %d lines, want the marker and the line that rotated it", len(cur))
	}
	marker := cur[0]
	want := map[string]any{
		"timestamp": "2026-07-15T08:11:12.345Z", "extension": "courier", "stream": "review",
		"event": LogRotated, KeyPreviousSize: float64(size(t, path+RotatedSuffix)),
	}
	if !reflect.DeepEqual(marker, want) {
		t.Errorf("the new log starts with %v, want %v", marker, want)
	}
	if cur[1]["event"] != ForwardingWarning || rotated[0]["event"] == LogRotated {
		t.Errorf("lines around the marker: %v, %v", rotated[0], cur[1])
	}
	// After the next rotation, that marker heads the rotation and a new
	// one the log: one per file.
	for i := 0; linesOf(t, path+RotatedSuffix)[0]["event"] != LogRotated; i++ {
		if i > 1000 {
			t.Fatal("the log never rotated again")
		}
		if err := l.Emit(seqEntry(1, i)); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range []string{path + RotatedSuffix, path} {
		if lines := linesOf(t, p); lines[0]["event"] != LogRotated || countEvent(lines, LogRotated) != 1 {
			t.Errorf("%s holds %d markers and starts with %v", p, countEvent(lines, LogRotated), lines[0]["event"])
		}
	}
}

// withoutMarkers drops the rotations' marker lines.
func withoutMarkers(lines []map[string]any) []map[string]any {
	var out []map[string]any
	for _, m := range lines {
		if m["event"] != LogRotated {
			out = append(out, m)
		}
	}
	return out
}

func countEvent(lines []map[string]any, event string) int {
	n := 0
	for _, m := range lines {
		if m["event"] == event {
			n++
		}
	}
	return n
}
