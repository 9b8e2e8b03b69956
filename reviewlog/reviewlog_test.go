package reviewlog

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/rs/zerolog"

	"github.com/seed6639df8c/courier/provenance"
)

var fixedTime = time.Date(2026, 7, 15, 10, 11, 12, 345_678_000, time.FixedZone("CEST", 2*3600))

func fixedClock() time.Time { return fixedTime }

func openTemp(t *testing.T, opts ...Option) (*Log, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "logs", "review.jsonl")
	l, err := Open(path, append([]Option{WithClock(fixedClock)}, opts...)...)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { l.Close() })
	return l, path
}

func readLines(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) == 0 {
		return nil
	}
	if b[len(b)-1] != '\n' {
		t.Fatalf("log does not end in a newline: %q", b)
	}
	return strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
}

// decodeLine parses one line with UseNumber, so tests see numbers as written.
func decodeLine(t *testing.T, line string) map[string]any {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(line))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		t.Fatalf("line is not a JSON object: %v\n%s", err, line)
	}
	if dec.More() {
		t.Fatalf("trailing data after the object: %s", line)
	}
	return m
}

func TestLinePrefixAndOrder(t *testing.T) {
	l, path := openTemp(t)
	err := l.Write(ForwardedApproved, map[string]any{
		"requestId":  "perm-1",
		"resolution": "approved",
		"command":    "echo '<a> & <b>'",
	})
	if err != nil {
		t.Fatal(err)
	}
	lines := readLines(t, path)
	want := `{"timestamp":"2026-07-15T08:11:12.345Z","extension":"courier","stream":"review","event":"forwarded_permission.approved","command":"echo '<a> & <b>'","requestId":"perm-1","resolution":"approved"}`
	if len(lines) != 1 || lines[0] != want {
		t.Fatalf("got  %q\nwant %q", lines, want)
	}
}

func TestWithExtension(t *testing.T) {
	l, path := openTemp(t, WithExtension("pi-permission-system"))
	if err := l.Write(ForwardedServingStarted, map[string]any{"sessionId": "s"}); err != nil {
		t.Fatal(err)
	}
	if got := decodeLine(t, readLines(t, path)[0])["extension"]; got != "pi-permission-system" {
		t.Errorf("extension = %v", got)
	}
}

func TestReservedKeysCannotBeOverridden(t *testing.T) {
	l, path := openTemp(t)
	err := l.Write(RequestDenied, map[string]any{
		"event":     RequestApproved,
		"timestamp": "1970-01-01T00:00:00.000Z",
		"extension": "forged",
		"stream":    "debug",
		"requestId": "perm-2",
	})
	if err != nil {
		t.Fatal(err)
	}
	line := readLines(t, path)[0]
	for _, key := range []string{"event", "timestamp", "extension", "stream"} {
		if n := strings.Count(line, `"`+key+`":`); n != 1 {
			t.Errorf("key %q appears %d times in %s", key, n, line)
		}
	}
	m := decodeLine(t, line)
	if m["event"] != RequestDenied || m["extension"] != "courier" || m["stream"] != "review" ||
		m["timestamp"] != "2026-07-15T08:11:12.345Z" || m["requestId"] != "perm-2" {
		t.Errorf("prefix overridden: %s", line)
	}
}

func TestTimestampsAndIntegersStayExact(t *testing.T) {
	type response struct {
		Approved    bool   `json:"approved"`
		RespondedAt int64  `json:"respondedAt"`
		Big         uint64 `json:"big"`
	}
	l, path := openTemp(t)
	err := l.Write(ForwardedResponseReceived, map[string]any{
		"createdAt": int64(1757000000123),
		"response":  response{Approved: true, RespondedAt: 1757000000999, Big: math.MaxUint64},
		"raw":       json.RawMessage(`{"updatedAt":9007199254740993}`),
		"ratio":     0.25,
	})
	if err != nil {
		t.Fatal(err)
	}
	line := readLines(t, path)[0]
	for _, want := range []string{
		`"createdAt":1757000000123`,
		`"respondedAt":1757000000999`,
		`"big":18446744073709551615`,
		`"updatedAt":9007199254740993`, // 2^53+1: a float64 round trip would print ...992
		`"ratio":0.25`,
	} {
		if !strings.Contains(line, want) {
			t.Errorf("line lacks %s:\n%s", want, line)
		}
	}
}

func TestTimestampFormatMatchesToISOString(t *testing.T) {
	tests := []struct {
		at   time.Time
		want string
	}{
		{time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), "2026-01-02T03:04:05.000Z"},
		{time.Date(2026, 1, 2, 3, 4, 5, 999_999_999, time.UTC), "2026-01-02T03:04:05.999Z"},
		{time.Date(2026, 1, 1, 0, 30, 0, 7_000_000, time.FixedZone("x", 3600)), "2025-12-31T23:30:00.007Z"},
	}
	for _, tt := range tests {
		var buf bytes.Buffer
		l := newLog(&buf, nil, config{width: 10, extension: "courier", now: func() time.Time { return tt.at }})
		if err := l.Write(ForwardingWarning, nil); err != nil {
			t.Fatal(err)
		}
		if got := decodeLine(t, buf.String())["timestamp"]; got != tt.want {
			t.Errorf("timestamp for %v = %v, want %s", tt.at, got, tt.want)
		}
	}
}

// The invariant pi pins for decidedBy: provenance nested in a line is reached by
// both the key-name mask and the width cap.
func TestNestedDecidedByIsMaskedAndCapped(t *testing.T) {
	longReason := strings.Repeat("r", 5000)
	tests := []struct {
		name      string
		decidedBy any
	}{
		{
			name: "generic map",
			decidedBy: map[string]any{
				"kind":               "forwarded",
				"responderSessionId": "parent",
				"decision": map[string]any{
					"kind": "authorizer", "name": "model-judge", "verdict": "deny",
					"reason": longReason, "token": "x",
				},
			},
		},
		{
			name:      "raw JSON",
			decidedBy: json.RawMessage(`{"kind":"forwarded","responderSessionId":"parent","decision":{"kind":"authorizer","name":"model-judge","verdict":"deny","reason":"` + longReason + `","token":"x"}}`),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l, path := openTemp(t)
			if err := l.Write(ForwardedDenied, map[string]any{"requestId": "perm-3", "decidedBy": tt.decidedBy}); err != nil {
				t.Fatal(err)
			}
			m := decodeLine(t, readLines(t, path)[0])
			decision := m["decidedBy"].(map[string]any)["decision"].(map[string]any)
			if decision["token"] != Redacted {
				t.Errorf("nested token = %v, want %s", decision["token"], Redacted)
			}
			reason := decision["reason"].(string)
			if n := utf8.RuneCountInString(reason); n != DefaultFieldWidth || !strings.HasSuffix(reason, "…") {
				t.Errorf("nested reason has %d runes (suffix %q), want %d ending in …", n, reason[len(reason)-3:], DefaultFieldWidth)
			}
			if decision["name"] != "model-judge" || decision["verdict"] != "deny" {
				t.Errorf("other members changed: %v", decision)
			}
		})
	}

	t.Run("provenance union", func(t *testing.T) {
		l, path := openTemp(t, WithFieldWidth(50))
		src := provenance.Forwarded{
			ResponderSessionID: provenance.Str("parent"),
			Decision: provenance.Forwarded{
				ResponderSessionID: nil,
				Decision:           provenance.Authorizer{Name: "model-judge", Verdict: provenance.VerdictDeny, Reason: &longReason},
			},
		}
		if err := l.Write(RequestDenied, map[string]any{"requestId": "perm-4", "decidedBy": src}); err != nil {
			t.Fatal(err)
		}
		line := readLines(t, path)[0]
		want := `"decidedBy":{"decision":{"decision":{"kind":"authorizer","name":"model-judge","reason":"` +
			strings.Repeat("r", 49) + `…","verdict":"deny"},"kind":"forwarded","responderSessionId":null},"kind":"forwarded","responderSessionId":"parent"}`
		if !strings.Contains(line, want) {
			t.Errorf("line lacks %s\n%s", want, line)
		}
		// What was written still decodes as the same decider, so the audit
		// census can read courier's own lines.
		var m map[string]json.RawMessage
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatal(err)
		}
		got, ok := provenance.Decode(m["decidedBy"])
		if !ok {
			t.Fatalf("decidedBy does not decode: %s", m["decidedBy"])
		}
		if a, ok := provenance.Effective(got).(provenance.Authorizer); !ok || a.Name != "model-judge" || provenance.Depth(got) != 2 {
			t.Errorf("decoded %#v", got)
		}
	})
}

func TestConcurrentWritersProduceWholeLines(t *testing.T) {
	const writers, perWriter = 16, 200
	l, path := openTemp(t)
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range perWriter {
				err := l.Write(RequestApproved, map[string]any{
					"requestId": fmt.Sprintf("perm-%d-%d", w, i),
					"writer":    w,
					"seq":       i,
					// Long enough that a torn write would show.
					"command": strings.Repeat(fmt.Sprintf("w%d ", w), 200),
				})
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}

	lines := readLines(t, path)
	if len(lines) != writers*perWriter {
		t.Fatalf("%d lines, want %d", len(lines), writers*perWriter)
	}
	seen := make(map[string]bool, len(lines))
	for i, line := range lines {
		if !json.Valid([]byte(line)) {
			t.Fatalf("line %d is not valid JSON: %.120s", i+1, line)
		}
		m := decodeLine(t, line)
		id, _ := m["requestId"].(string)
		if seen[id] {
			t.Fatalf("line %d repeats %s", i+1, id)
		}
		seen[id] = true
		if m["event"] != RequestApproved {
			t.Fatalf("line %d: event %v", i+1, m["event"])
		}
		want := strings.Repeat(fmt.Sprintf("w%s ", m["writer"]), 200)
		if m["command"] != capString(want, DefaultFieldWidth) {
			t.Fatalf("line %d: command mixes writers", i+1)
		}
	}
}

func TestOpenValidatesOptions(t *testing.T) {
	path := filepath.Join(t.TempDir(), "review.jsonl")
	tests := []struct {
		name string
		opt  Option
	}{
		{"zero width", WithFieldWidth(0)},
		{"negative width", WithFieldWidth(-1)},
		{"empty extension", WithExtension("")},
		{"nil clock", WithClock(nil)},
	}
	for _, tt := range tests {
		if l, err := Open(path, tt.opt); err == nil {
			l.Close()
			t.Errorf("%s: Open succeeded", tt.name)
		}
	}
	l, err := Open(path, WithFieldWidth(1))
	if err != nil {
		t.Fatalf("width 1: %v", err)
	}
	l.Close()
}

func TestWriteErrorsAreReturned(t *testing.T) {
	t.Run("device full", func(t *testing.T) {
		f, err := os.OpenFile("/dev/full", os.O_WRONLY, 0)
		if err != nil {
			t.Skip("no /dev/full:", err)
		}
		defer f.Close()
		l := newLog(f, f, config{width: DefaultFieldWidth, extension: DefaultExtension, now: fixedClock})
		err = l.Write(RequestApproved, map[string]any{"requestId": "perm-5"})
		if !errors.Is(err, syscall.ENOSPC) {
			t.Fatalf("Write to /dev/full = %v, want ENOSPC", err)
		}
		if !strings.Contains(err.Error(), RequestApproved) {
			t.Errorf("error %q does not name the event", err)
		}
		// The error belongs to that call; it is reported again only if the
		// next write fails too.
		if err := l.Write(RequestApproved, nil); !errors.Is(err, syscall.ENOSPC) {
			t.Errorf("second write = %v", err)
		}
	})

	t.Run("file closed underneath", func(t *testing.T) {
		l, _ := openTemp(t)
		l.file.Close()
		if err := l.Write(RequestDenied, nil); !errors.Is(err, os.ErrClosed) {
			t.Fatalf("Write = %v, want os.ErrClosed", err)
		}
	})

	t.Run("after Close", func(t *testing.T) {
		l, _ := openTemp(t)
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		if err := l.Write(RequestDenied, nil); !errors.Is(err, ErrClosed) {
			t.Fatalf("Write = %v, want ErrClosed", err)
		}
		if err := l.Sync(); !errors.Is(err, ErrClosed) {
			t.Errorf("Sync = %v, want ErrClosed", err)
		}
		if err := l.Close(); err != nil {
			t.Errorf("second Close = %v", err)
		}
	})

	t.Run("zerolog's handler is not used", func(t *testing.T) {
		called := false
		old := zerolog.ErrorHandler
		zerolog.ErrorHandler = func(error) { called = true }
		t.Cleanup(func() { zerolog.ErrorHandler = old })
		l := newLog(failingWriter{}, nil, config{width: 10, extension: "courier", now: fixedClock})
		if err := l.Write(RequestDenied, nil); err == nil {
			t.Fatal("Write succeeded")
		}
		if called {
			t.Error("zerolog.ErrorHandler saw the error")
		}
	})
}

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("disk on fire") }

// tornWriter accepts only the first limit bytes of its first write, then
// works; it stands for a disk that filled and was cleared.
type tornWriter struct {
	buf   bytes.Buffer
	limit int
	calls int
}

func (w *tornWriter) Write(p []byte) (int, error) {
	w.calls++
	if w.calls == 1 {
		w.buf.Write(p[:w.limit])
		return w.limit, syscall.ENOSPC
	}
	return w.buf.Write(p)
}

func TestLineAfterATornWriteStartsOnItsOwnLine(t *testing.T) {
	w := &tornWriter{limit: 30}
	l := newLog(w, nil, config{width: DefaultFieldWidth, extension: DefaultExtension, now: fixedClock})
	if err := l.Write(RequestApproved, map[string]any{"requestId": "perm-torn"}); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("first Write = %v, want ENOSPC", err)
	}
	if err := l.Write(RequestDenied, map[string]any{"requestId": "perm-next"}); err != nil {
		t.Fatal(err)
	}
	if err := l.Write(RequestDenied, map[string]any{"requestId": "perm-last"}); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(&w.buf)
	var lines []string
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	if len(lines) != 3 {
		t.Fatalf("lines = %q", lines)
	}
	if json.Valid([]byte(lines[0])) {
		t.Errorf("fragment %q parses", lines[0])
	}
	for _, line := range lines[1:] {
		if !json.Valid([]byte(line)) {
			t.Errorf("line after the fragment is not JSON: %q", line)
		}
	}
}

type panickingMarshaler struct{}

func (panickingMarshaler) MarshalJSON() ([]byte, error) { panic("boom") }

type failingMarshaler struct{}

func (failingMarshaler) MarshalJSON() ([]byte, error) { return nil, errors.New("no shape") }

func TestUnencodableValuesBecomePlaceholders(t *testing.T) {
	type cyclic struct {
		Next *cyclic `json:"next"`
	}
	loop := &cyclic{}
	loop.Next = loop

	l, path := openTemp(t)
	err := l.Write(ForwardingError, map[string]any{
		"channel":   make(chan int),
		"nan":       math.NaN(),
		"panics":    panickingMarshaler{},
		"fails":     failingMarshaler{},
		"cycle":     loop,
		"message":   "kept",
		"requestId": "perm-6",
	})
	if err != nil {
		t.Fatalf("Write = %v; an unencodable detail must not cost the line", err)
	}
	m := decodeLine(t, readLines(t, path)[0])
	for _, key := range []string{"channel", "nan", "panics", "fails", "cycle"} {
		s, _ := m[key].(string)
		if !strings.HasPrefix(s, "[unloggable: ") {
			t.Errorf("%s = %v, want a placeholder", key, m[key])
		}
	}
	if m["message"] != "kept" || m["requestId"] != "perm-6" {
		t.Errorf("good details lost: %v", m)
	}
}

func TestErrorValuesAreLoggedAsMessages(t *testing.T) {
	l, path := openTemp(t)
	cause := fmt.Errorf("write response perm-7: %w", os.ErrPermission)
	if err := l.Write(ForwardingError, map[string]any{"message": "Failed to write response", "error": cause}); err != nil {
		t.Fatal(err)
	}
	if got := decodeLine(t, readLines(t, path)[0])["error"]; got != cause.Error() {
		t.Errorf("error = %#v, want %q", got, cause.Error())
	}
}

func TestNilLogDiscards(t *testing.T) {
	var l *Log
	if err := l.Write(RequestApproved, map[string]any{"x": 1}); err != nil {
		t.Errorf("Write = %v", err)
	}
	if err := l.Sync(); err != nil {
		t.Errorf("Sync = %v", err)
	}
	if err := l.Close(); err != nil {
		t.Errorf("Close = %v", err)
	}
}

func TestEmptyEventIsRefused(t *testing.T) {
	l := newLog(io.Discard, nil, config{width: 10, extension: "courier", now: fixedClock})
	if err := l.Write("", nil); err == nil {
		t.Error("Write with an empty event succeeded")
	}
}

// zerolog's global level can silence every logger in the process; the
// review log must say so rather than drop entries quietly.
func TestGloballyDisabledZerologIsAnError(t *testing.T) {
	old := zerolog.GlobalLevel()
	zerolog.SetGlobalLevel(zerolog.Disabled)
	t.Cleanup(func() { zerolog.SetGlobalLevel(old) })
	var buf bytes.Buffer
	l := newLog(&buf, nil, config{width: 10, extension: "courier", now: fixedClock})
	if err := l.Write(RequestApproved, nil); err == nil {
		t.Error("Write succeeded with nothing written")
	}
	if buf.Len() != 0 {
		t.Errorf("wrote %q", buf.String())
	}
}

func TestSync(t *testing.T) {
	l, _ := openTemp(t)
	if err := l.Write(RequestApproved, nil); err != nil {
		t.Fatal(err)
	}
	if err := l.Sync(); err != nil {
		t.Errorf("Sync = %v", err)
	}
}
