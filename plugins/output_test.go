package plugins

import (
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/rs/zerolog"
)

func TestHCLogBridgeSilencesThePluginStderrLogger(t *testing.T) {
	zl := zerolog.New(&syncBuffer{}).Level(zerolog.DebugLevel)
	b := newHCLogBridge(zl, "testauthz")
	if got := b.Named("testauthz").GetLevel(); got != hclog.Off {
		t.Errorf("plugin stderr logger level %v, want Off", got)
	}
	if got := b.Named("stdio").GetLevel(); got == hclog.Off {
		t.Error("go-plugin's own loggers are silenced too")
	}
	if b.IsTrace() || !b.IsDebug() {
		t.Error("trace must be dropped, debug kept")
	}
	// odd args, errors, formats and odd types must not panic
	b.With("k").Error("m", "a", hclog.Fmt("%d", 1), "err", errTest, "n", 3, "dangling")
}

var errTest = &testError{}

type testError struct{}

func (*testError) Error() string { return "boom" }

func TestPluginOutputParsesWithCaps(t *testing.T) {
	buf := &syncBuffer{}
	o := newPluginOutput(zerolog.New(buf).Level(zerolog.TraceLevel))
	now := time.Unix(0, 0)
	o.now = func() time.Time { return now }
	stderr := o.stream("stderr", true)
	for _, line := range []string{
		`{"@message": 1, "@level": "info"}`,
		`{"@level":"warn","@message":"disk low","@module":"judge"}`,
		`{"@level": ["x"], "@message": {}}`,
		"panic: boom",
		"\x1b[31mred\x00",
	} {
		stderr.Write([]byte(line + "\n"))
	}
	stderr.Write([]byte(strings.Repeat("y", 3*maxLineBytes)))
	stderr.Write([]byte("\n"))
	got := buf.String()
	for _, want := range []string{
		`"level":"info","stream":"stderr","message":"{\"@message\": 1, \"@level\": \"info\"}"`,
		`"level":"warn","stream":"stderr","module":"judge","message":"disk low"`,
		`"level":"error","stream":"stderr","message":"panic: boom"`,
		`"truncated":true`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("log lacks %s:\n%s", want, got)
		}
	}
	if strings.Contains(got, strings.Repeat("y", maxLineBytes+1)) {
		t.Error("a line passed the cap")
	}
	// the rate cap, and the report when the window moves on
	for range 3 * maxLinesPerSecond {
		stderr.Write([]byte("spam\n"))
	}
	now = now.Add(time.Second)
	stderr.Write([]byte("after\n"))
	if n := strings.Count(buf.String(), `"message":"spam"`); n >= 3*maxLinesPerSecond {
		t.Errorf("%d spam lines logged, want the cap", n)
	}
	if !strings.Contains(buf.String(), "lines dropped") {
		t.Error("dropped lines not reported")
	}
	if tail := o.Tail(); !strings.Contains(tail, "after") {
		t.Errorf("tail %q", tail)
	}
}

// FuzzPluginOutput: nothing a plugin writes to its streams panics the
// broker.
func FuzzPluginOutput(f *testing.F) {
	for _, s := range []string{`{"@message": 1, "@level": "info"}` + "\n", "{\"@level\":\"error\",\"@message\":\"x\"}\n", "\xff\n\n", "{"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		o := newPluginOutput(zerolog.New(&syncBuffer{}).Level(zerolog.TraceLevel))
		s := o.stream("stderr", true)
		s.Write(data)
		s.flush()
		o.Tail()
	})
}

// What a plugin prints reaches the operator's terminal in the tail that
// broker check --plugins and the start errors show, and in the --verbose
// console log: escape sequences (7-bit ESC and 8-bit CSI) and bidi
// overrides in it must not drive or reorder the terminal.
func TestPluginOutputCannotDriveTheTerminal(t *testing.T) {
	buf := &syncBuffer{}
	o := newPluginOutput(zerolog.New(zerolog.ConsoleWriter{Out: buf, NoColor: true}).Level(zerolog.TraceLevel))
	for _, stream := range []*lineSplitter{o.stream("stderr", true), o.stream("stdout", false)} {
		stream.Write([]byte("\x1b]0;owned\x07\x1b[2K\u009b2Kok \u202etxt.exe\n"))
		stream.Write([]byte(`{"@level":"error","@message":"\u001b[1A\u009b1Aforged"}` + "\n"))
	}
	for where, text := range map[string]string{"tail": o.Tail(), "console": buf.String()} {
		if strings.ContainsAny(text, "\x1b\x07\u009b\u202e") {
			t.Errorf("%s holds a control character: %q", where, text)
		}
	}
}
