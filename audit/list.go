package audit

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/seed6639df8c/courier/provenance"
	"github.com/seed6639df8c/courier/reviewlog"
)

// The listing behind `broker audit --list`: the decisions of a review log
// one per line, newest last, with what was asked (issue 16: the census
// said who decided, never what).
//
// A decision is an ask, listed once from one of its terminal lines (the
// events the census counts): one ask leaves several (the broker's
// auto_approved and approved, the child's response_received and
// permission_request approved when they share a log), joined by
// requestId and request digest as the census joins them (lister.go). The
// line listed is the first that says what was asked (the broker's:
// reviewlog.Asked), else the first. A line that lacks a fact (an old line,
// pi's, a child's) lists it as unknown: "?" in the text, left out of the
// JSON.

// Listed is one decision as the listing prints it. Every string is the
// log's text, which a child can influence: WriteText escapes it for a
// terminal, and JSON escapes it anyway.
type Listed struct {
	// Time is the line's timestamp as the log has it.
	Time string `json:"time,omitempty"`
	// Decider is the effective decider's kind (provenance.Kind: user,
	// rule, session_approval, unavailable, …) or NoDecider; Name is an
	// authorizer link's name.
	Decider string `json:"decider"`
	Name    string `json:"name,omitempty"`
	// Forwarded says the decision came through at least one forwarded
	// frame (a child's view of its parent's decision).
	Forwarded bool `json:"forwarded,omitempty"`
	// Outcome is "approved", "denied", or empty when the line says
	// neither.
	Outcome string `json:"outcome,omitempty"`
	// Agent, Surface, Value, Units and Cwd are what was asked, by whom;
	// empty when the line does not say.
	Agent   string   `json:"agent,omitempty"`
	Surface string   `json:"surface,omitempty"`
	Value   string   `json:"value,omitempty"`
	Units   []string `json:"units,omitempty"`
	Cwd     string   `json:"cwd,omitempty"`
	// RequestID names the ask; Event is the line's event.
	RequestID string `json:"requestId,omitempty"`
	Event     string `json:"event"`

	at time.Time // Time parsed; zero when it is not a time
}

// The outcomes a Listed can have, which --outcome filters by.
const (
	OutcomeApproved = "approved"
	OutcomeDenied   = "denied"
)

// Filter selects the decisions a listing prints; a zero field selects
// every decision.
type Filter struct {
	// Decider is a provenance kind ("user", "rule", "authorizer", …),
	// NoDecider, or "authorizer:NAME" for one link.
	Decider string
	// Agent, Surface and Outcome must equal the decision's.
	Agent, Surface, Outcome string
	// Since drops decisions logged before it, and those whose time is
	// unknown.
	Since time.Time
}

// Match reports whether the filter selects l.
func (f Filter) Match(l Listed) bool {
	if f.Decider != "" && f.Decider != l.Decider && f.Decider != deciderLabel(l) {
		return false
	}
	switch {
	case f.Agent != "" && f.Agent != l.Agent,
		f.Surface != "" && f.Surface != l.Surface,
		f.Outcome != "" && f.Outcome != l.Outcome:
		return false
	}
	return f.Since.IsZero() || !l.at.IsZero() && !l.at.Before(f.Since)
}

// ParseSince reads --since: a duration back from now ("1h", "90m") or an
// RFC 3339 time.
func ParseSince(s string, now time.Time) (time.Time, error) {
	if d, err := time.ParseDuration(s); err == nil {
		if d < 0 {
			return time.Time{}, fmt.Errorf("--since %q: a duration back from now must not be negative", s)
		}
		return now.Add(-d), nil
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	return time.Time{}, fmt.Errorf("--since %q: want a duration (1h, 30m) or an RFC 3339 time (2026-07-15T10:00:00Z)", s)
}

// listed reads a terminal line's decision and what it says was asked.
// pi's lines name the agent agentName and the asked value command, path
// or toolName; courier's broker lines use reviewlog.Asked's keys.
func listed(m map[string]json.RawMessage, event string, implied outcome) Listed {
	l := Listed{Event: event, Time: str(m, "timestamp"), Decider: NoDecider}
	if t, err := time.Parse(time.RFC3339Nano, l.Time); err == nil {
		l.at = t
	}
	switch lineOutcome(m, implied) {
	case outcomeApproved:
		l.Outcome = OutcomeApproved
	case outcomeDenied:
		l.Outcome = OutcomeDenied
	}
	if raw, ok := m[reviewlog.KeyDecidedBy]; ok && !isNull(raw) {
		if src, ok := provenance.Decode(raw); ok {
			l.Forwarded = provenance.Depth(src) > 0
			d := deciderOf(provenance.Effective(src))
			l.Decider, l.Name = d.kind, d.name
		}
	}
	l.Agent = firstStr(m, reviewlog.KeyRequesterAgentName, "agentName")
	l.Surface = firstStr(m, reviewlog.KeySurface, "toolName")
	l.Value = firstStr(m, reviewlog.KeyValue, "command", "path")
	l.Cwd = str(m, reviewlog.KeyRequesterCwd)
	if raw, ok := m[reviewlog.KeyUnits]; ok {
		var units []string
		if json.Unmarshal(raw, &units) == nil {
			l.Units = units
		}
	}
	return l
}

// str is the string under key, "" when there is none or it is not one.
func str(m map[string]json.RawMessage, key string) string {
	var s string
	if raw, ok := m[key]; !ok || json.Unmarshal(raw, &s) != nil {
		return ""
	}
	return s
}

// firstStr is the first of the keys' strings that is set.
func firstStr(m map[string]json.RawMessage, keys ...string) string {
	for _, k := range keys {
		if s := str(m, k); s != "" {
			return s
		}
	}
	return ""
}

// List reads the log at path and its rotation (<path>.1 first, as
// CensusFile does) and calls ls for every line, then flushes it, so ls
// emits every decision, in the order they were logged, newest last. It
// returns the files read.
func List(path string, ls *Lister) (files []string, err error) {
	for _, p := range []string{path + reviewlog.RotatedSuffix, path} {
		f, err := os.Open(p)
		if errors.Is(err, fs.ErrNotExist) && p != path {
			continue
		}
		if err != nil {
			return files, fmt.Errorf("audit: %w", err)
		}
		files = append(files, p)
		err = ListReader(f, ls)
		f.Close()
		if err != nil {
			return files, fmt.Errorf("audit: %s: %w", p, err)
		}
	}
	return files, ls.Flush()
}

// ListReader calls ls for every line of r. A line longer than
// MaxLineBytes is skipped, as the census skips it. Call ls.Flush after
// the last of the input.
func ListReader(r io.Reader, ls *Lister) error {
	lr := lineReader{br: bufio.NewReaderSize(r, readBufferSize), max: MaxLineBytes}
	for n := 1; ; n++ {
		line, tooLong, err := lr.next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("read line %d: %w", n, err)
		}
		if tooLong {
			continue
		}
		if err := ls.Line(line); err != nil {
			return err
		}
	}
}

// unknown is what the text listing prints for a fact the line does not
// give.
const unknown = "?"

// WriteText writes l as one line for a person: time, decider, outcome,
// agent, surface, value (a bash ask's units joined by "; "), request id,
// separated by two spaces. Every fact is escaped for a terminal
// (Printable): a value the child wrote cannot move the cursor, clear the
// screen or forge a second line.
func (l Listed) WriteText(w io.Writer) error {
	value := l.Value
	if len(l.Units) > 0 {
		value = strings.Join(l.Units, "; ")
	}
	fields := []string{l.Time, deciderLabel(l), l.Outcome, l.Agent, l.Surface, value, l.RequestID}
	var b strings.Builder
	for i, f := range fields {
		if i > 0 {
			b.WriteString("  ")
		}
		if f == "" {
			b.WriteString(unknown)
			continue
		}
		b.WriteString(Printable(f))
	}
	b.WriteByte('\n')
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteJSON writes l as one JSON object on one line (JSON Lines), as
// safe for a terminal as the text: encoding/json escapes C0 controls and
// the line separators, and what a terminal would still act on (DEL, C1
// controls, bidirectional controls) is escaped as \uXXXX too.
func (l Listed) WriteJSON(w io.Writer) error {
	data, err := json.Marshal(l)
	if err != nil {
		return fmt.Errorf("audit: encode a listed decision: %w", err)
	}
	_, err = w.Write(append(jsonForTerminal(data), '\n'))
	return err
}

// jsonForTerminal escapes, in JSON that encoding/json wrote (valid UTF-8,
// C0 controls escaped already), the runes Printable escapes, as \uXXXX.
func jsonForTerminal(data []byte) []byte {
	var out []byte
	for i := 0; i < len(data); {
		r, size := utf8.DecodeRune(data[i:])
		if r >= 0x20 && r != '\\' && needsEscape(r, size) {
			if out == nil {
				out = append(make([]byte, 0, len(data)+16), data[:i]...)
			}
			out = fmt.Appendf(out, `\u%04x`, r)
		} else if out != nil {
			out = append(out, data[i:i+size]...)
		}
		i += size
	}
	if out == nil {
		return data
	}
	return out
}

// deciderLabel is the decider as the text listing prints it and --decider
// names it: the kind, or "authorizer:NAME" for a link. A forwarded frame
// is not part of it (Forwarded is apart), so one filter finds a decider's
// decisions in a broker's log and in its children's.
func deciderLabel(l Listed) string {
	if l.Decider == string(provenance.KindAuthorizer) && l.Name != "" {
		return "authorizer:" + l.Name
	}
	return l.Decider
}
