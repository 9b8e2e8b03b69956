package notify

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"
)

// DefaultInterval is the least time between two notifications of one
// sink: a flood of asks makes one notification a second, each saying how
// many asks it stands for.
const DefaultInterval = time.Second

// DefaultTimeout bounds a notification command (and notify-send): one
// still running then is killed, with its process group.
const DefaultTimeout = 10 * time.Second

// Caps on a note's fields, in characters: a notification is a glance, and
// an environment variable is no place for a megabyte.
const (
	capField   = 120
	capSummary = 240
)

// Note is one ask as a notification tells of it. The strings come from a
// child (cleaned by the prompt); Ask cleans and caps them again.
type Note struct {
	// ID is the request id; Agent and Session name the requester;
	// Surface is what it asks for (bash, read, …).
	ID, Agent, Session, Surface string
	// Summary names the ask in one line: "'reviewer' asks bash: git push".
	Summary string
	// Waiting is how many asks the prompt held once this one arrived.
	Waiting int
}

// Batch is what one notification tells: how many asks arrived since the
// sink's last notification, and the newest of them.
type Batch struct {
	Count int
	Last  Note
}

// Text is the batch in one line.
func (b Batch) Text() string {
	if b.Count <= 1 {
		return b.Last.Summary
	}
	return fmt.Sprintf("%d new asks; the last: %s", b.Count, b.Last.Summary)
}

// Options configure a Notifier.
type Options struct {
	// Command is the operator's --notify-cmd, split by ParseCommand; ""
	// runs none.
	Command string
	// Desktop sends desktop notifications with notify-send when a session
	// bus is there (DBUS_SESSION_BUS_ADDRESS set) and notify-send is on
	// PATH.
	Desktop bool
	// Terminal, when set, hears each batch at once, on the sink's own
	// goroutine; it must not block. The prompt writes TerminalAlert with
	// its next frame.
	Terminal func(Batch)
	// Serving is the session the broker serves (COURIER_SERVING_SESSION).
	Serving string
	// Interval is the least time between two notifications of one sink
	// (0: DefaultInterval); Timeout bounds a command (0: DefaultTimeout).
	Interval, Timeout time.Duration
	// OnError hears the first failure of each sink; nil: nothing does.
	OnError func(error)
	// Getenv and LookPath read the environment; nil: os.Getenv and
	// exec.LookPath.
	Getenv   func(string) string
	LookPath func(string) (string, error)
}

// Notifier tells of asks through its sinks (the terminal, the desktop,
// the operator's command), each on a goroutine of its own; see the
// package doc. Its methods may be called from any goroutine.
type Notifier struct {
	sinks  []*sink
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	once   sync.Once
}

// sink is one way of telling, with its one pending batch.
type sink struct {
	name     string
	deliver  func(ctx context.Context, b Batch) error
	interval time.Duration
	timeout  time.Duration
	onError  func(error)
	kick     chan struct{}

	mu       sync.Mutex
	pending  Batch
	failures int
	sent     int
}

// Start checks the options and starts a goroutine for each sink they
// give. An error names what is wrong with the command (its syntax, a
// program not found), for the operator to fix before serving.
func Start(opts Options) (*Notifier, error) {
	if opts.Getenv == nil {
		opts.Getenv = os.Getenv
	}
	if opts.LookPath == nil {
		opts.LookPath = exec.LookPath
	}
	if opts.Interval <= 0 {
		opts.Interval = DefaultInterval
	}
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	n := &Notifier{}
	add := func(name string, deliver func(context.Context, Batch) error) {
		n.sinks = append(n.sinks, &sink{
			name: name, deliver: deliver, interval: opts.Interval, timeout: opts.Timeout,
			onError: opts.OnError, kick: make(chan struct{}, 1),
		})
	}
	if opts.Terminal != nil {
		tell := opts.Terminal
		add("terminal", func(_ context.Context, b Batch) error { tell(b); return nil })
	}
	if opts.Desktop && opts.Getenv("DBUS_SESSION_BUS_ADDRESS") != "" {
		if path, err := opts.LookPath("notify-send"); err == nil {
			add("notify-send", func(ctx context.Context, b Batch) error { return desktop(ctx, path, b) })
		}
	}
	if strings.TrimSpace(opts.Command) != "" {
		argv, err := resolveCommand(opts.Command, opts.LookPath)
		if err != nil {
			return nil, err
		}
		serving := clean(opts.Serving, capField)
		add(fmt.Sprintf("--notify-cmd %q", opts.Command), func(ctx context.Context, b Batch) error {
			return run(ctx, argv, b.environment(serving))
		})
	}
	n.ctx, n.cancel = context.WithCancel(context.Background())
	for _, s := range n.sinks {
		n.wg.Add(1)
		go func() {
			defer n.wg.Done()
			s.run(n.ctx)
		}()
	}
	return n, nil
}

// CheckCommand reports what is wrong with the operator's --notify-cmd, as
// Start would: its syntax (ParseCommand), or a program not found. A
// blank command is no command, and fine.
func CheckCommand(cmd string) error {
	if strings.TrimSpace(cmd) == "" {
		return nil
	}
	_, err := resolveCommand(cmd, exec.LookPath)
	return err
}

// resolveCommand splits cmd and finds its program.
func resolveCommand(cmd string, lookPath func(string) (string, error)) ([]string, error) {
	argv, err := ParseCommand(cmd)
	if err != nil {
		return nil, fmt.Errorf("--notify-cmd %q: %w", cmd, err)
	}
	path, err := lookPath(argv[0])
	if err != nil {
		return nil, fmt.Errorf("--notify-cmd %q: the program %q: %w", cmd, argv[0], err)
	}
	argv[0] = path
	return argv, nil
}

// Ask tells the sinks of an ask. It never blocks: the ask is counted into
// each sink's pending batch, which its goroutine delivers when the
// interval allows. A nil Notifier does nothing.
func (n *Notifier) Ask(note Note) {
	if n == nil || len(n.sinks) == 0 {
		return
	}
	note = note.cleaned()
	for _, s := range n.sinks {
		s.mu.Lock()
		s.pending.Count++
		s.pending.Last = note
		s.mu.Unlock()
		select {
		case s.kick <- struct{}{}:
		default:
		}
	}
}

// Sinks names the sinks this notifier tells, in order.
func (n *Notifier) Sinks() []string {
	if n == nil {
		return nil
	}
	out := make([]string, len(n.sinks))
	for i, s := range n.sinks {
		out[i] = s.name
	}
	return out
}

// Stop ends the sinks' goroutines, killing a command still running, and
// waits for them. Batches not yet delivered are dropped. Safe to call
// more than once, and on nil.
func (n *Notifier) Stop() {
	if n == nil {
		return
	}
	n.once.Do(func() {
		n.cancel()
		n.wg.Wait()
	})
}

// run delivers the sink's batches until ctx ends, one per interval at
// most.
func (s *sink) run(ctx context.Context) {
	var last time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.kick:
		}
		if !last.IsZero() {
			if wait := time.Until(last.Add(s.interval)); wait > 0 {
				t := time.NewTimer(wait)
				select {
				case <-ctx.Done():
					t.Stop()
					return
				case <-t.C:
				}
			}
		}
		s.mu.Lock()
		b := s.pending
		s.pending = Batch{}
		s.mu.Unlock()
		if b.Count == 0 {
			continue
		}
		dctx, cancel := context.WithTimeout(ctx, s.timeout)
		err := s.deliver(dctx, b)
		if err != nil && errors.Is(dctx.Err(), context.DeadlineExceeded) {
			err = fmt.Errorf("did not finish within %s, killed: %w", s.timeout, err)
		}
		cancel()
		last = time.Now()
		if ctx.Err() != nil {
			return
		}
		s.done(err)
	}
}

// done counts a delivery; the first failure is reported, later ones only
// counted.
func (s *sink) done(err error) {
	s.mu.Lock()
	s.sent++
	if err != nil {
		s.failures++
	}
	first := err != nil && s.failures == 1
	s.mu.Unlock()
	if first && s.onError != nil {
		s.onError(fmt.Errorf("notify: %s failed: %w (later failures of it are not reported)", s.name, err))
	}
}

// cleaned is the note with every field cleaned and capped.
func (n Note) cleaned() Note {
	return Note{
		ID: clean(n.ID, capField), Agent: clean(n.Agent, capField), Session: clean(n.Session, capField),
		Surface: clean(n.Surface, capField), Summary: clean(n.Summary, capSummary), Waiting: n.Waiting,
	}
}

// environment is the batch as the command's environment.
func (b Batch) environment(serving string) []string {
	return []string{
		"COURIER_ASK_ID=" + b.Last.ID,
		"COURIER_ASK_AGENT=" + b.Last.Agent,
		"COURIER_ASK_SESSION=" + b.Last.Session,
		"COURIER_ASK_SURFACE=" + b.Last.Surface,
		"COURIER_ASK_SUMMARY=" + clean(b.Text(), capSummary+40),
		"COURIER_ASK_COUNT=" + strconv.Itoa(b.Count),
		"COURIER_ASKS_WAITING=" + strconv.Itoa(b.Last.Waiting),
		"COURIER_SERVING_SESSION=" + serving,
	}
}

// clean spells every control, format and line-separating character of s
// as \uXXXX, replaces invalid UTF-8 and cuts s to at most max characters
// (the last an ellipsis): nothing of it can end an escape sequence, start
// one, break a line or hide text.
func clean(s string, max int) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	var b strings.Builder
	n := 0
	for i, r := range s {
		if max > 0 && n == max-1 && i+utf8.RuneLen(r) < len(s) {
			b.WriteRune('…')
			break
		}
		if unicode.IsControl(r) || unicode.In(r, unicode.Cf, unicode.Zl, unicode.Zp) {
			fmt.Fprintf(&b, `\u%04x`, r)
		} else {
			b.WriteRune(r)
		}
		n++
	}
	return b.String()
}
