package plugins

import (
	"bytes"
	"encoding/json"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/rs/zerolog"
)

// Caps on what a plugin can put into the broker's diagnostic log.
const (
	// maxLineBytes: longer lines are cut; the rest of the line is dropped.
	maxLineBytes = 4096
	// maxLinesPerSecond per plugin process, all streams together; lines
	// over it are counted and reported, not logged.
	maxLinesPerSecond = 50
	// tailLines kept for error messages (a plugin that dies at start
	// usually says why on stderr).
	tailLines = 8
	// maxTailRunes per kept line.
	maxTailRunes = 200
)

// pluginOutput receives everything one plugin process prints: its raw
// stderr, and the stdout and stderr go-plugin forwards after the
// handshake. It never blocks on anything but its own mutex and never
// fails, so a chatty or hostile plugin cannot stall go-plugin's readers
// (and through them the plugin's pipes) or crash the broker.
type pluginOutput struct {
	logger zerolog.Logger
	now    func() time.Time

	mu          sync.Mutex
	windowStart time.Time
	inWindow    int
	dropped     int
	tail        []string
}

func newPluginOutput(logger zerolog.Logger) *pluginOutput {
	return &pluginOutput{logger: logger, now: time.Now}
}

// stream returns the writer for one named stream. stderr lines are parsed
// as hclog JSON; the others are logged as they are.
func (o *pluginOutput) stream(name string, parse bool) *lineSplitter {
	return &lineSplitter{out: o, stream: name, parse: parse}
}

// lineSplitter turns writes into capped lines.
type lineSplitter struct {
	out    *pluginOutput
	stream string
	parse  bool

	mu   sync.Mutex
	buf  []byte
	over bool // the current line passed maxLineBytes
}

// Write accepts everything and always succeeds.
func (s *lineSplitter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		chunk := p
		if i >= 0 {
			chunk = p[:i]
		}
		if len(s.buf)+len(chunk) > maxLineBytes {
			s.over = true
		}
		if room := maxLineBytes - len(s.buf); room > 0 {
			s.buf = append(s.buf, chunk[:min(room, len(chunk))]...)
		}
		if i < 0 {
			break
		}
		s.out.line(s.stream, s.parse, s.buf, s.over)
		s.buf, s.over = s.buf[:0], false
		p = p[i+1:]
	}
	return n, nil
}

// flush logs a final line that had no newline.
func (s *lineSplitter) flush() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.buf) > 0 {
		s.out.line(s.stream, s.parse, s.buf, s.over)
		s.buf, s.over = s.buf[:0], false
	}
}

// line logs one line, or counts it when over the rate.
func (o *pluginOutput) line(stream string, parse bool, raw []byte, truncated bool) {
	text := strings.ToValidUTF8(string(bytes.TrimRight(raw, "\r")), "\uFFFD")
	if strings.TrimSpace(text) == "" {
		return
	}
	o.mu.Lock()
	// The tail reaches the operator's terminal in error messages.
	o.keepTail(sanitize(text))
	now := o.now()
	if now.Sub(o.windowStart) >= time.Second {
		if o.dropped > 0 {
			o.logger.Warn().Int("lines", o.dropped).Msg("plugin output over the rate cap, lines dropped")
		}
		o.windowStart, o.inWindow, o.dropped = now, 0, 0
	}
	o.inWindow++
	if o.inWindow > maxLinesPerSecond {
		o.dropped++
		o.mu.Unlock()
		return
	}
	o.mu.Unlock()

	// A plain line is logged at Info: it is what the plugin chose to
	// print, and the review log keeps Info and above.
	level, msg, module, ok := zerolog.InfoLevel, text, "", false
	if parse {
		level, msg, module, ok = parseHCLogLine(text)
	}
	if !ok {
		level, msg = zerolog.InfoLevel, text
		if strings.HasPrefix(text, "panic:") || strings.HasPrefix(text, "fatal error:") {
			level = zerolog.ErrorLevel
		}
	}
	e := o.logger.WithLevel(level)
	if e == nil {
		return
	}
	// The message is sanitized after parsing (a JSON escape decodes to
	// a control character): the --verbose console prints it raw.
	msg = sanitize(msg)
	e = e.Str("stream", stream)
	if module != "" {
		e = e.Str("module", capRunes(sanitize(module), 100))
	}
	if truncated {
		e = e.Bool("truncated", true)
	}
	e.Msg(msg)
}

// keepTail remembers the last lines for error messages. Called under mu.
func (o *pluginOutput) keepTail(text string) {
	if len(o.tail) == tailLines {
		o.tail = append(o.tail[:0], o.tail[1:]...)
	}
	o.tail = append(o.tail, capRunes(text, maxTailRunes))
}

// Tail returns the last lines the plugin printed, joined, for an error
// message; empty when it printed nothing.
func (o *pluginOutput) Tail() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return strings.Join(o.tail, " | ")
}

// parseHCLogLine reads one hclog JSON line with every field type-checked:
// go-plugin's own parser asserts types and panics on {"@message": 1}. A
// line whose @level or @message is not a string is not an hclog line and
// is logged raw.
func parseHCLogLine(text string) (level zerolog.Level, msg, module string, ok bool) {
	if !strings.HasPrefix(strings.TrimSpace(text), "{") {
		return 0, "", "", false
	}
	var fields map[string]json.RawMessage
	if json.Unmarshal([]byte(text), &fields) != nil {
		return 0, "", "", false
	}
	str := func(key string) (string, bool) {
		raw, present := fields[key]
		if !present {
			return "", false
		}
		var s string
		return s, json.Unmarshal(raw, &s) == nil
	}
	lvl, okLevel := str("@level")
	msg, okMsg := str("@message")
	if !okLevel || !okMsg {
		return 0, "", "", false
	}
	module, _ = str("@module")
	switch strings.ToLower(lvl) {
	case "trace":
		level = zerolog.TraceLevel
	case "debug":
		level = zerolog.DebugLevel
	case "warn", "warning":
		level = zerolog.WarnLevel
	case "error":
		level = zerolog.ErrorLevel
	default:
		level = zerolog.InfoLevel
	}
	return level, msg, module, true
}

// capRunes cuts s to n runes, marking the cut.
func capRunes(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n-1]) + "…"
}
