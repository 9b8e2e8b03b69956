package intent

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// Item is one turn of the conversation, as it may reach a link.
type Item struct {
	// Role is RoleUser or RoleAssistant.
	Role string
	// Text is the turn's text, cleaned (see the package doc).
	Text string
	// Derived marks a summary a model wrote of earlier turns (a
	// compaction's, a branch's), not anyone's words as said: untrusted.
	// A derived item's Role is RoleAssistant, whatever role the agent
	// gave it in its own context: a model wrote it, and a judge must not
	// take it for what the user said.
	Derived bool
}

// The roles of an Item.
const (
	RoleUser      = "user"
	RoleAssistant = "assistant"
)

// Bounds of a Reader. Each can be lowered per Reader through Options;
// the line limit is fixed.
const (
	// DefaultBudget is the bytes of text a Snapshot returns at most when
	// Options.Budget is 0.
	DefaultBudget = 16 << 10
	// MinBudget is the smallest budget Open accepts.
	MinBudget = 256
	// MaxBudget is the largest: the conversation reaches a plugin in one
	// gRPC message with the ask (a request file is at most 1 MiB), and a
	// plugin refuses a message past 4 MiB, which would make every ask
	// the link sees a link failure. A judge shows far less anyway.
	MaxBudget = 1 << 20
	// MaxLine is the longest line read: a longer one (a tool's output, a
	// pasted image) is skipped whole, unread.
	MaxLine = 1 << 20
	// DefaultMaxRead is the bytes one Snapshot reads at most.
	DefaultMaxRead = 4 << 20
	// DefaultWindow is how much of a file's end is read when a Reader
	// first sees it (or sees it replaced): a transcript of a long session
	// runs to hundreds of megabytes, and the conversation is its end.
	DefaultWindow = 64 << 20
	// readDeadline bounds the time one Snapshot spends reading.
	readDeadline = 250 * time.Millisecond
	// chunk is the size of one read.
	chunk = 256 << 10
)

// Options configure a Reader. The zero Options reads any of the formats
// with the default bounds.
type Options struct {
	// Format is FormatAuto (or ""), FormatPi, FormatClaudeCode or
	// FormatCodex.
	Format string
	// Budget is the bytes of text a Snapshot keeps, newest first
	// (DefaultBudget when 0, MinBudget to MaxBudget).
	Budget int
	// MaxRead is the bytes one Snapshot reads at most (DefaultMaxRead
	// when 0).
	MaxRead int
	// Window is how many bytes before its end a file is first read from
	// (DefaultWindow when 0).
	Window int
}

// Stats says how a Reader is doing, for the operator.
type Stats struct {
	// Format is the format read: the configured one, the one detected, or
	// "" while auto detection has not decided.
	Format string
	// Lines is the lines read; Skipped the lines skipped (over MaxLine,
	// or not one JSON object without repeated keys).
	Lines, Skipped int64
	// Offset is how far into the file the Reader has read.
	Offset int64
	// CaughtUp reports that the last Snapshot read to the end of the file.
	CaughtUp bool
	// Err is why the last Snapshot could not read the file, nil if it
	// could.
	Err error
}

// Reader reads a transcript incrementally. It is safe for concurrent use;
// Snapshot calls are serialized.
type Reader struct {
	path                    string
	format                  string
	budget, maxRead, window int
	lim                     limits

	mu sync.Mutex
	// The file as last seen.
	opened   bool
	dev, ino uint64
	offset   int64
	// carry is the start of a line whose end is not written yet;
	// skipping, that the bytes up to the next newline are discarded
	// (a line over MaxLine, or the partial line a window starts in).
	carry    []byte
	skipping bool
	buf      []byte
	// dec reads the lines; nil while auto detection has not decided.
	dec      decoder
	detected int // lines auto detection has looked at
	stats    Stats
}

// Open returns a Reader of the transcript at path. The file need not
// exist yet (pi writes its session file after the first answer): until it
// does, Snapshot returns nothing. A path that exists and is not a regular
// file is refused, as are options out of range.
func Open(path string, opts Options) (*Reader, error) {
	if path == "" {
		return nil, errors.New("intent: no transcript path")
	}
	format := opts.Format
	if format == "" {
		format = FormatAuto
	}
	if !slices.Contains(Formats, format) {
		return nil, fmt.Errorf("intent: format %q: expected one of %v", opts.Format, Formats)
	}
	budget := opts.Budget
	if budget == 0 {
		budget = DefaultBudget
	}
	if budget < MinBudget || budget > MaxBudget {
		return nil, fmt.Errorf("intent: budget %d bytes: expected %d to %d", opts.Budget, MinBudget, MaxBudget)
	}
	maxRead, window := opts.MaxRead, opts.Window
	if maxRead == 0 {
		maxRead = DefaultMaxRead
	}
	if window == 0 {
		window = DefaultWindow
	}
	if maxRead < 0 || window < 0 {
		return nil, fmt.Errorf("intent: max read %d, window %d: expected positive sizes", opts.MaxRead, opts.Window)
	}
	if fi, err := os.Lstat(path); err == nil && !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("intent: transcript %s: not a regular file (%s)", path, fi.Mode().Type())
	}
	r := &Reader{
		path: path, format: format, budget: budget, maxRead: maxRead, window: window,
		// Hold enough text that the budget is met along the path even
		// past branches the user left, and never without bound.
		lim: limits{nodes: 1 << 17, text: 4*budget + MaxLine, item: budget},
	}
	r.restart()
	return r, nil
}

// Snapshot reads what was appended to the transcript since the last call
// and returns the conversation as it now stands: its newest turns, oldest
// first, within the budget. It reads at most Options.MaxRead bytes and for
// at most a quarter of a second; until it has read to the end of the file
// (a long transcript first met, a burst of output), it returns nothing
// rather than an older part of the conversation taken for the whole. It
// returns nothing too when the file is missing, unreadable or not in the
// format. A truncated or replaced file is read anew.
func (r *Reader) Snapshot() []Item {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.read()
	if !r.stats.CaughtUp || r.dec == nil {
		return nil
	}
	return newest(r.dec.conversation(r.budget), r.budget)
}

// Stats returns how the Reader is doing.
func (r *Reader) Stats() Stats {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.stats
	s.Offset = r.offset
	return s
}

// restart forgets everything read.
func (r *Reader) restart() {
	r.opened, r.offset, r.carry, r.skipping = false, 0, r.carry[:0], false
	r.dec, r.detected = nil, 0
	r.stats = Stats{}
	if r.format != FormatAuto {
		r.dec = newDecoder(r.format, r.lim)
		r.stats.Format = r.format
	}
}

// read reads what is new in the file, within the bounds of one call.
func (r *Reader) read() {
	fd, st, err := openRegular(r.path)
	if err != nil {
		r.restart()
		r.stats.Err = err
		return
	}
	defer unix.Close(fd)
	r.stats.Err = nil
	id := func() (uint64, uint64) { return uint64(st.Dev), uint64(st.Ino) }
	if dev, ino := id(); r.opened && (dev != r.dev || ino != r.ino || st.Size < r.offset) {
		r.restart() // replaced, or truncated: a new transcript
	}
	if !r.opened {
		r.opened = true
		r.dev, r.ino = id()
		if st.Size > int64(r.window) {
			// Start inside the last window, in the line before it: the
			// bytes up to the first newline are a line's end, not a line.
			r.offset, r.skipping = st.Size-int64(r.window)-1, true
		}
	}
	if r.buf == nil {
		r.buf = make([]byte, chunk)
	}
	deadline := time.Now().Add(readDeadline)
	left := r.maxRead
	r.stats.CaughtUp = false
	for left > 0 {
		n, err := pread(fd, r.buf[:min(len(r.buf), left)], r.offset)
		if err != nil {
			r.stats.Err = &fs.PathError{Op: "read", Path: r.path, Err: err}
			return
		}
		if n == 0 {
			break
		}
		r.consume(r.buf[:n])
		r.offset += int64(n)
		left -= n
		if time.Now().After(deadline) {
			break
		}
	}
	r.stats.CaughtUp = r.offset >= st.Size
}

// consume splits bytes read into lines.
func (r *Reader) consume(b []byte) {
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			if r.skipping {
				return
			}
			if len(r.carry)+len(b) > MaxLine {
				r.carry, r.skipping = r.carry[:0], true
				r.skip()
				return
			}
			r.carry = append(r.carry, b...)
			return
		}
		seg := b[:i]
		b = b[i+1:]
		if r.skipping {
			r.skipping = false
			continue
		}
		line := seg
		if len(r.carry) > 0 {
			r.carry = append(r.carry, seg...)
			line = r.carry
		}
		if len(line) > MaxLine {
			r.skip()
		} else {
			r.handle(line)
		}
		r.carry = r.carry[:0]
	}
}

func (r *Reader) skip() {
	r.stats.Skipped++
	if r.dec != nil {
		r.dec.skipped()
	}
}

// handle reads one complete line.
func (r *Reader) handle(line []byte) {
	if len(bytes.TrimSpace(line)) == 0 {
		return
	}
	v, ok := parseLine(line)
	if !ok {
		r.skip()
		return
	}
	r.stats.Lines++
	if r.dec == nil {
		if r.detected >= detectLines {
			return // not a format this package reads
		}
		r.detected++
		f := detect(v)
		if f == "" {
			return
		}
		r.dec = newDecoder(f, r.lim)
		r.stats.Format = f
	}
	r.dec.line(v)
}

// openRegular opens path for reading as the mailbox reads a hostile file:
// never through a final symlink, never blocking on a FIFO, and only a
// regular file, judged on the open descriptor.
func openRegular(path string) (int, *unix.Stat_t, error) {
	var fd int
	err := retry(func() (err error) {
		fd, err = unix.Open(path, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
		return err
	})
	if err != nil {
		if errors.Is(err, unix.ELOOP) {
			return -1, nil, fmt.Errorf("intent: transcript %s: a symbolic link: name the file itself", path)
		}
		return -1, nil, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	var st unix.Stat_t
	if err := retry(func() error { return unix.Fstat(fd, &st) }); err != nil {
		unix.Close(fd)
		return -1, nil, &fs.PathError{Op: "fstat", Path: path, Err: err}
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		unix.Close(fd)
		return -1, nil, fmt.Errorf("intent: transcript %s: not a regular file", path)
	}
	return fd, &st, nil
}

func pread(fd int, b []byte, off int64) (n int, err error) {
	err = retry(func() (err error) {
		n, err = unix.Pread(fd, b, off)
		return err
	})
	return n, err
}

func retry(fn func() error) error {
	for {
		if err := fn(); !errors.Is(err, unix.EINTR) {
			return err
		}
	}
}
