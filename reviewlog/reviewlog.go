// Package reviewlog writes courier's review log: the append-only JSON-lines
// audit trail that says what was asked, what decided it and why, in the
// shape of pi-permission-system's review log so that the same tools (and
// courier's own `broker audit`) read both.
//
// # Line format
//
// Every line is one JSON object that starts with pi's prefix
//
//	{"timestamp":"2026-07-15T10:11:12.345Z","extension":"courier","stream":"review","event":"…", …details}
//
// where timestamp is UTC with millisecond precision, exactly as JavaScript's
// Date.prototype.toISOString prints it. The details follow in key order (the
// byte order of the key names). The four prefix keys are reserved: a detail
// under one of those names is dropped, so no detail value can make a line
// claim a different event or time.
//
// # Entries
//
// Each event courier writes has a type, named after the event with Entry
// after it ([ForwardedPromptedEntry] for [ForwardedPrompted]), whose fields
// are the event's details and whose comment is the event's documentation;
// [Log.Emit] writes one. [Log.Write] takes an event name and a map of
// details instead: it is the general definition of a line, which every
// entry's line must equal for the same details (entries_test.go).
//
// # What reaches the file
//
// Each detail value is first encoded the way encoding/json would encode it
// (struct tags, MarshalJSON, json.RawMessage) and decoded back into a generic
// tree with UseNumber, so integers such as ms timestamps stay exact. Then, as
// in pi's write pipeline:
//
//  1. values under sensitive key names (see [IsSensitiveKey]) are replaced
//     by [Redacted], at any depth; a null is left alone and a masked subtree
//     is not visited;
//  2. every string, at any depth, longer than the field width (default
//     [DefaultFieldWidth] runes) is cut to width-1 runes plus "…".
//
// Masking runs before the cap, so a masked value is masked whole. Keys are
// neither masked nor cut. pi's bash-command masking (assignments, env K=v,
// headers inside command strings) is not done here.
//
// That round trip is the definition, not the route: the common kinds
// (strings, numbers, booleans, map[string]any, []any, []string and the
// output of MarshalJSON methods) are written directly, byte for byte as the
// round trip would write them, because the round trip cost a quarter of a
// busy broker's CPU. Other values still take it. An entry goes further: its
// keys are fixed and none is sensitive, so its strings are only escaped and
// cut, and only what it holds of free form (decidedBy) is masked.
//
// # Durability and failure
//
// Lines are appended with O_APPEND and one write(2) each, so concurrent
// writers, including other processes on a local filesystem, never interleave
// within a line. Lines are not fsynced: pi appends synchronously without
// fsync, the review log is the explanation of decisions whose record of truth
// is the response file, and a flush per line would put a disk round trip on
// every decision's hot path. Call [Log.Sync] where durability matters (at
// shutdown).
//
// A log from [Open] is rotated at a size cap ([DefaultMaxBytes], or
// [WithMaxBytes]): renamed to <path>.1, replacing the rotation before, so
// that a flood cannot fill the disk; writers in other processes follow the
// rotation on their next line (rotate.go).
//
// A write error is returned to the caller of [Log.Emit] or [Log.Write]
// rather than going to zerolog's global error handler, so a broker can
// notice that its audit trail stopped. After a write that failed part-way, the next line starts
// with a newline so that the torn fragment stays a line of its own and every
// later line still parses.
package reviewlog

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"
)

// DefaultFieldWidth is pi's default reviewLogFieldMaxWidth: long enough for
// any real command or path a human needs to judge, short enough that a
// pasted file body cannot swell the log.
const DefaultFieldWidth = 1000

// DefaultExtension is the "extension" value of every line unless
// [WithExtension] says otherwise; pi writes "pi-permission-system" there.
const DefaultExtension = "courier"

// Stream is the "stream" value of every line. courier has no debug stream in
// this file, so it is fixed.
const Stream = "review"

// Keys of the line prefix. Details cannot use them.
const (
	keyTimestamp = "timestamp"
	keyExtension = "extension"
	keyStream    = "stream"
	keyEvent     = "event"
)

// timestampLayout matches JavaScript's toISOString for years 0–9999.
const timestampLayout = "2006-01-02T15:04:05.000Z"

// ErrClosed is returned by Write after Close.
var ErrClosed = errors.New("reviewlog: log is closed")

// Log appends review entries to one file. It is safe for concurrent use.
//
// A nil *Log is valid and discards every entry, so code paths that run with
// no review log configured need no conditionals.
type Log struct {
	width     int
	redacted  string // Redacted as the width cap leaves it
	extension string
	now       func() time.Time

	mu     sync.Mutex // serializes lines and guards the fields below
	logger zerolog.Logger
	out    io.Writer // the file; a plain writer only in tests
	file   *os.File  // nil when out is not a file
	err    error     // the error of the line being written now
	rotErr error     // why the log could not be rotated before that line
	torn   bool      // the previous line was written only in part
	closed bool
	rot    rotation // the size cap (rotate.go)
}

// Option configures Open.
type Option func(*config)

type config struct {
	width     int
	extension string
	now       func() time.Time
	maxBytes  int64
}

// WithFieldWidth sets the width cap, in runes, for every string value. It
// must be at least 1; Open rejects anything smaller.
func WithFieldWidth(runes int) Option {
	return func(c *config) { c.width = runes }
}

// WithExtension sets the "extension" value of each line. It exists so a
// courier node sharing a log file with pi nodes can still be told apart, or
// can pose as pi where a downstream tool insists on pi's name.
func WithExtension(name string) Option {
	return func(c *config) { c.extension = name }
}

// WithClock replaces time.Now as the source of line timestamps, for tests
// that compare whole lines.
func WithClock(now func() time.Time) Option {
	return func(c *config) { c.now = now }
}

func buildConfig(opts []Option) (config, error) {
	c := config{width: DefaultFieldWidth, extension: DefaultExtension, now: time.Now, maxBytes: DefaultMaxBytes}
	for _, o := range opts {
		o(&c)
	}
	if c.width < 1 {
		return c, fmt.Errorf("reviewlog: field width %d: must be at least 1", c.width)
	}
	if c.extension == "" {
		return c, errors.New("reviewlog: extension name is empty")
	}
	if c.now == nil {
		return c, errors.New("reviewlog: clock is nil")
	}
	if c.maxBytes < 0 {
		return c, fmt.Errorf("reviewlog: size cap %d: must be 0 (never rotate) or more", c.maxBytes)
	}
	return c, nil
}

// Open opens the review log at path for appending, creating it 0600 and any
// missing parent directories 0700. The log is rotated at [DefaultMaxBytes]
// unless [WithMaxBytes] says otherwise (rotate.go).
//
// Like pi's restrictExistingPathToOwner, Open also tightens what an older
// writer left looser: an existing log file is narrowed to 0600, and the log's
// own directory loses its group and other bits. A directory counts as the
// log's own when this user owns it, it is not sticky, and it holds nothing
// but regular files, as pi's logs directory does; /tmp, /var/log, /dev, a
// home or a project directory fail that test and are left alone, because
// narrowing them would break whoever else uses them. Point the log at a
// directory of its own. Nothing is ever loosened. The path must name a
// regular file.
func Open(path string, opts ...Option) (*Log, error) {
	c, err := buildConfig(opts)
	if err != nil {
		return nil, err
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("reviewlog: create directory: %w", err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND|openNonBlock, 0o600)
	if err != nil {
		return nil, fmt.Errorf("reviewlog: open: %w", err)
	}
	if err := restrictFile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("reviewlog: %s: %w", path, err)
	}
	if err := restrictDir(dir); err != nil {
		f.Close()
		return nil, fmt.Errorf("reviewlog: %w", err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("reviewlog: %s: %w", path, err)
	}
	l := newLog(f, f, c)
	l.rot = rotation{path: path, max: c.maxBytes, fi: fi}
	return l, nil
}

// restrictFile narrows an existing log to 0600 through the open descriptor,
// so the file checked is the file changed. A device or FIFO is refused:
// chmod would change the device node, and a FIFO could block every decision
// behind a reader that never comes. (Open opens non-blocking, so a FIFO
// without a reader fails there instead of hanging it.)
func restrictFile(f *os.File) error {
	fi, err := f.Stat()
	if err != nil {
		return fmt.Errorf("stat: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("not a regular file (%s)", fi.Mode().Type())
	}
	if fi.Mode().Perm() != 0o600 {
		if err := f.Chmod(0o600); err != nil {
			return fmt.Errorf("restrict to 0600: %w", err)
		}
	}
	return nil
}

// newLog wraps an open writer. Tests use it to write through writers Open
// would refuse, such as /dev/full.
func newLog(out io.Writer, file *os.File, c config) *Log {
	l := &Log{width: c.width, redacted: string(appendCapped(nil, Redacted, c.width)), extension: c.extension, now: c.now, out: out, file: file}
	l.logger = zerolog.New((*lineWriter)(l))
	return l
}

// lineWriter is the Log as zerolog's output. zerolog hands it one complete
// line per event and has no way to return a write error to whoever logged
// the event, so lineWriter records the error for Write to return and tells
// zerolog all went well, which keeps zerolog from printing it to stderr.
// It runs only under l.mu, from inside Write.
type lineWriter Log

func (w *lineWriter) Write(p []byte) (int, error) {
	w.rotErr = (*Log)(w).beforeLine(len(p))
	line := p
	if w.torn {
		line = append([]byte{'\n'}, p...)
	}
	n, err := w.out.Write(line)
	switch {
	case n == 0:
		// Nothing reached the file; an earlier fragment is still open.
	case n < len(line):
		w.torn = true
	default:
		w.torn = false
	}
	if err == nil && n < len(line) {
		err = io.ErrShortWrite
	}
	w.err = err
	return len(p), nil
}

// Write appends one entry for event with the given details: a line of any
// shape. Entries of courier's events go through [Log.Emit]; Write is the
// definition their lines are held to. It returns an error only when the
// line did not reach the file whole: the log is closed, or the write failed.
//
// A detail value that cannot be encoded as JSON (a channel, a NaN, a cycle,
// a failing or panicking MarshalJSON) does not cost the entry: it is logged
// as the string "[unloggable: <reason>]" and Write still returns nil,
// because an audit record with a visible hole says more than no record, and
// an error here would invite a retry that duplicates the line.
func (l *Log) Write(event string, details map[string]any) error {
	if l == nil {
		return nil
	}
	if event == "" {
		return errors.New("reviewlog: empty event name")
	}
	r := l.render(details)
	defer putRenderer(r)
	return l.writeLine(event, r)
}

// writeLine writes the line of one entry: the prefix, then the details r
// rendered, in r's order. [Log.Write] and [Log.Emit] both end here, so the
// two build their lines one way.
func (l *Log) writeLine(event string, r *renderer) error {
	// The timestamp is plain ASCII, for which zerolog's Bytes writes what
	// its Str would, without making a string of it first.
	var stamp [len(timestampLayout) + 8]byte
	ts := l.now().UTC().AppendFormat(stamp[:0], timestampLayout)

	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return ErrClosed
	}
	e := l.logger.Log()
	if e == nil {
		return fmt.Errorf("reviewlog: %s not written: zerolog's global level is %s", event, zerolog.GlobalLevel())
	}
	e.Bytes(keyTimestamp, ts).Str(keyExtension, l.extension).Str(keyStream, Stream).Str(keyEvent, event)
	for _, f := range r.fields {
		e.RawJSON(f.key, r.buf[f.start:f.end])
	}
	l.err, l.rotErr = nil, nil
	e.Send()
	if err := l.err; err != nil {
		l.err = nil
		return fmt.Errorf("reviewlog: write %s: %w", event, err)
	}
	if err := l.rotErr; err != nil {
		l.rotErr = nil
		return fmt.Errorf("reviewlog: %s written, but the log was not rotated: %w", event, err)
	}
	return nil
}

// render turns details into sanitized JSON values in key order, in a pooled
// renderer the caller must put back. It runs outside the lock: this is the
// costly part of a write.
func (l *Log) render(details map[string]any) *renderer {
	r := getRenderer(l.width, l.redacted)
	for k, v := range details {
		switch k {
		case keyTimestamp, keyExtension, keyStream, keyEvent:
			continue
		}
		r.fields = append(r.fields, fieldSpan{key: k, value: v})
	}
	slices.SortFunc(r.fields, func(a, b fieldSpan) int { return strings.Compare(a.key, b.key) })
	for i := range r.fields {
		f := &r.fields[i]
		f.start = len(r.buf)
		if !r.field(f.key, f.value) {
			r.buf = append(r.buf[:f.start], l.renderGeneric(f.key, f.value)...)
		}
		f.end = len(r.buf)
	}
	return r
}

// renderGeneric sanitizes one top-level value the general way: encode it,
// decode it into a tree, mask and cap the tree, encode it again. It is the
// definition of what a detail looks like in the log; the renderer's fast
// path only ever reproduces it. It treats the value as the sole member of
// an object under its own key, so a top-level "token" is masked by the
// same rule as a nested one.
func (l *Log) renderGeneric(key string, v any) []byte {
	return renderGeneric(key, v, l.width)
}

func renderGeneric(key string, v any, width int) []byte {
	tree, err := normalize(v)
	if err != nil {
		tree = "[unloggable: " + err.Error() + "]"
	}
	wrapped := sanitize(map[string]any{key: tree}, width).(map[string]any)
	raw, err := encode(wrapped[key])
	if err != nil {
		// Unreachable: the tree holds only types encoding/json produced.
		raw, _ = encode(capString("[unloggable: "+err.Error()+"]", width))
	}
	return raw
}

// Sync flushes the file to stable storage. Write never does; call Sync
// where losing the last lines to a power cut would matter.
func (l *Log) Sync() error {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return ErrClosed
	}
	if l.file == nil {
		return nil
	}
	if err := l.file.Sync(); err != nil {
		return fmt.Errorf("reviewlog: sync: %w", err)
	}
	return nil
}

// Close closes the file. Later writes return ErrClosed. Closing twice is
// not an error, so a deferred Close can follow an explicit one.
func (l *Log) Close() error {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil
	}
	l.closed = true
	if l.file == nil {
		return nil
	}
	if err := l.file.Close(); err != nil {
		return fmt.Errorf("reviewlog: close: %w", err)
	}
	return nil
}
