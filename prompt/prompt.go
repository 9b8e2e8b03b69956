package prompt

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/seed6639df8c/courier/decision"
	"github.com/seed6639df8c/courier/notify"
	"github.com/seed6639df8c/courier/serve"
)

// DefaultArmDelay is how long keys are ignored after a new ask appears on
// screen. It is long enough to swallow a double press or a key aimed at
// an ask that vanished, short enough not to be noticed.
const DefaultArmDelay = 300 * time.Millisecond

// escWait is how long a lone ESC waits for the rest of an escape sequence
// before it counts as the Escape key (vim's ttimeoutlen is 100 ms; a
// sequence split by ssh arrives within a few).
const escWait = 40 * time.Millisecond

// TerminalTTY is the decision.Decision Terminal of every answer this
// prompt gives, the --terminal value that puts it on the broker's
// terminal: which terminal answered is courier's review-log fact, while
// the wire's decider says only {kind: user, via: dialog} ([Decider]).
const TerminalTTY = "tty"

// ReasonClosed answers an ask still queued when the prompt closes.
const ReasonClosed = "The operator's prompt closed before this permission request was answered"

// Options configure a Prompt.
type Options struct {
	// Session is the serving session id, shown on the idle line.
	Session string
	// ArmDelay overrides DefaultArmDelay; negative means no delay.
	ArmDelay time.Duration
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Home is the directory that `~` and `$HOME` expand to when an edited
	// grant pattern is checked; empty means the user's home directory,
	// which is what `broker serve` gives its rules.
	Home string
	// PromptTimeout is the broker's promptTimeoutMs: how long an ask may
	// wait from the moment it is held, which the prompt counts down on
	// screen. 0 shows no countdown.
	PromptTimeout time.Duration
	// NotifyCmd is the operator's --notify-cmd, run for asks as they
	// arrive (see notify.ParseCommand); "" runs none. Desktop sends
	// desktop notifications with notify-send when a session bus is there.
	// The bell and the terminal's own notification escape are always
	// written (see notify.TerminalAlert).
	NotifyCmd string
	Desktop   bool
	// OnError hears what fails out of the operator's sight (a
	// notification); nil: nothing does.
	OnError func(error)
	// Getenv reads the environment for the terminal's notification
	// escape; nil means os.Getenv.
	Getenv func(string) string
}

// device is the terminal the prompt runs on.
type device interface {
	io.Reader
	io.Writer
	// size returns the terminal's columns and rows.
	size() (cols, rows int, err error)
	// resized delivers a value when the terminal's size changed; nil
	// when the device cannot tell.
	resized() <-chan os.Signal
	// close restores the terminal and makes a blocked Read return.
	close() error
}

// Prompt is the operator's terminal: a serve.Holder that asks the human at
// the broker. Hold and Decide may be called from any number of goroutines;
// their asks queue and are shown one at a time, each requester in turn
// (see queue.go). A held ask costs the prompt no goroutine, only what it
// shows of it and its place in the queue.
type Prompt struct {
	dev     device
	session string
	home    string // fixed at start: Hold reads it without the lock
	// texts are the texts held asks share; Hold uses them without the
	// lock (they have their own).
	texts    texts
	timeout  time.Duration
	getenv   func(string) string
	notes    *notify.Notifier
	soon     atomic.Bool
	now      func() time.Time
	input    chan []byte
	wake     chan struct{}
	stop     chan struct{}
	loopDone chan struct{}
	readDone chan struct{}
	once     sync.Once
	closeErr error

	mu     sync.Mutex
	m      machine
	closed bool
	// alert is the bell and notification escape that the loop writes
	// with its next frame (see alert.go).
	alert string
	scr   screen // only the loop and Close touch it
}

var _ serve.Holder = (*Prompt)(nil)

// ErrNoTerminal means there is no terminal for the prompt: standard input
// is not one, or the process has no controlling terminal (/dev/tty).
var ErrNoTerminal = errors.New("no terminal attached")

// Open takes over the controlling terminal for the prompt: stdin must be a
// terminal (a broker whose stdin is a pipe or a file runs unattended) and
// /dev/tty must open. The prompt reads keys from /dev/tty in its own mode
// (no echo, no line editing; Ctrl-C still interrupts the broker) and draws
// on its bottom lines; Close gives the terminal back as it was.
func Open(stdin *os.File, opts Options) (*Prompt, error) {
	if err := notify.CheckCommand(opts.NotifyCmd); err != nil {
		return nil, err
	}
	dev, err := openTTY(stdin)
	if err != nil {
		return nil, err
	}
	return start(dev, opts), nil
}

// start runs a prompt on dev: it draws the idle frame before returning, so
// that the frame's lines are reserved before anything else is written.
func start(dev device, opts Options) *Prompt {
	p := &Prompt{
		dev: dev, session: Clean(opts.Session, capShort), now: opts.Now,
		input: make(chan []byte), wake: make(chan struct{}, 1), stop: make(chan struct{}),
		loopDone: make(chan struct{}), readDone: make(chan struct{}),
	}
	if p.now == nil {
		p.now = time.Now
	}
	switch {
	case opts.ArmDelay > 0:
		p.m.armDelay = opts.ArmDelay
	case opts.ArmDelay == 0:
		p.m.armDelay = DefaultArmDelay
	}
	p.home = opts.Home
	if p.home == "" {
		p.home, _ = os.UserHomeDir()
	}
	p.m.home = p.home
	p.timeout = max(opts.PromptTimeout, 0)
	p.startNotifier(opts)
	p.redraw()
	go p.read()
	go p.loop()
	return p
}

// Hold queues the ask and returns at once, with the function that
// withdraws it; done hears the operator's answer once the ask has been
// shown and answered. An ask withdrawn first (its child gave up, the
// prompt timed out, the broker is stopping) leaves the queue, and the
// screen if it was on it, and done hears "unavailable" at once; so it does
// for an ask still queued at Close. done is called exactly once, never
// with the prompt's lock held, and on the prompt's own goroutine when the
// operator answers: it must not block.
//
// Hold copies out of ask what the screen shows (cleaned and capped; the
// long texts within the bounds of kept.go) and keeps nothing of ask
// itself, its payload included: a held ask costs the prompt that summary
// and its place in the queue.
func (p *Prompt) Hold(ask *serve.Ask, done func(decision.Decision)) (withdraw func(cause error)) {
	e := hold(ask, p.home, &p.texts)
	e.done = func(d decision.Decision) {
		// Whatever this prompt answers (the operator, its timeout, its
		// closing), the broker's review log says the tty terminal had it;
		// the wire's decider stays the seed's {user, dialog}.
		d.Terminal = TerminalTTY
		done(d)
	}
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		e.done(decision.NobodyAnswered(ReasonClosed))
		return func(error) {}
	}
	now := p.now()
	if p.timeout > 0 {
		e.deadline = now.Add(p.timeout)
	}
	p.m.push(e, now)
	held := p.m.held()
	p.mu.Unlock()
	p.poke()
	p.notes.Ask(noteOf(ask, e, held))
	return func(cause error) { p.withdraw(e, cause) }
}

// Decide is Hold, waiting for the answer: it shows the ask once those
// before it are answered and returns the operator's answer, or returns at
// once when ctx ends first (the broker discards that return value).
func (p *Prompt) Decide(ctx context.Context, ask serve.Ask) decision.Decision {
	if ctx.Err() != nil {
		return withdrawn(context.Cause(ctx))
	}
	answer := make(chan decision.Decision, 1)
	withdraw := p.Hold(&ask, func(d decision.Decision) { answer <- d })
	stop := context.AfterFunc(ctx, func() { withdraw(context.Cause(ctx)) })
	defer stop()
	return <-answer
}

// withdraw takes a held ask out of the queue and tells its asker, unless
// an answer, Close or an earlier withdrawal took it out first.
func (p *Prompt) withdraw(e *entry, cause error) {
	why := "withdrawn"
	if cause != nil {
		why = Clean(cause.Error(), capLine)
	}
	p.mu.Lock()
	queued := p.m.withdraw(e, why, p.now())
	p.mu.Unlock()
	if queued {
		p.poke()
		e.done(withdrawn(cause))
	}
}

func withdrawn(cause error) decision.Decision {
	return decision.NobodyAnswered(fmt.Sprintf("The ask left the operator's prompt unanswered: %v", cause))
}

// Close removes the prompt from the terminal and restores the terminal.
// Asks still queued are answered "unavailable" (ReasonClosed). It waits
// for the prompt's goroutines and is safe to call more than once.
func (p *Prompt) Close() error {
	p.once.Do(func() {
		p.mu.Lock()
		p.closed = true
		queued := p.m.drain()
		p.mu.Unlock()
		p.notes.Stop()
		for _, e := range queued {
			e.done(decision.NobodyAnswered(ReasonClosed))
		}
		close(p.stop)
		// Wait for the loop to stop drawing before writing the last bytes,
		// so that nothing follows them; closing the device then ends the
		// reader's blocked Read.
		<-p.loopDone
		_, werr := io.WriteString(p.dev, p.scr.clear())
		cerr := p.dev.close()
		<-p.readDone
		if err := errors.Join(werr, cerr); err != nil {
			p.closeErr = fmt.Errorf("prompt: restoring the terminal: %w", err)
		}
	})
	return p.closeErr
}

// poke wakes the loop to redraw; it never blocks.
func (p *Prompt) poke() {
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// read passes the terminal's bytes to the loop until the device is closed
// or the prompt stops.
func (p *Prompt) read() {
	defer close(p.readDone)
	buf := make([]byte, 256)
	for {
		n, err := p.dev.Read(buf)
		if n > 0 {
			chunk := append([]byte(nil), buf[:n]...)
			select {
			case p.input <- chunk:
			case <-p.stop:
				return
			}
		}
		if err != nil {
			return
		}
		select {
		case <-p.stop:
			return
		default:
		}
	}
}

// loop owns the screen: it applies keys, redraws on every change, and
// times the Escape key and the frame's own changes (a new ask arms, the
// time left ticks, once a second).
func (p *Prompt) loop() {
	defer close(p.loopDone)
	var dec decoder
	escTimer := time.NewTimer(time.Hour)
	escTimer.Stop()
	armTimer := time.NewTimer(time.Hour)
	armTimer.Stop()
	defer escTimer.Stop()
	defer armTimer.Stop()
	for {
		select {
		case <-p.stop:
			return
		case <-p.wake:
		case <-p.dev.resized():
		case <-armTimer.C:
		case b := <-p.input:
			keys, held := dec.feed(b)
			if held {
				escTimer.Reset(escWait)
			}
			p.apply(keys)
		case <-escTimer.C:
			p.apply(dec.flush())
		}
		if wait := p.redraw(); wait > 0 {
			armTimer.Reset(wait)
		}
	}
}

// apply hands the keys to the machine and delivers the answers, once the
// lock is released.
func (p *Prompt) apply(keys []key) {
	if len(keys) == 0 {
		return
	}
	var decided []answer
	p.mu.Lock()
	for _, k := range keys {
		decided = append(decided, p.m.press(k, p.now())...)
	}
	p.mu.Unlock()
	for _, a := range decided {
		a.e.done(a.d)
	}
}

// redraw draws the current frame if it changed, after the alert if one
// is due, in one write. It returns how long until the frame changes by
// itself (the ask on screen arms, or its time left changes), or 0.
func (p *Prompt) redraw() time.Duration {
	cols, rows, err := p.dev.size()
	usable := err == nil && cols >= 1 && rows >= 3
	p.mu.Lock()
	alert := p.alert
	p.alert = ""
	if !usable {
		// No usable size: nothing sensible can be drawn until a resize.
		p.mu.Unlock()
		if alert != "" {
			_, _ = io.WriteString(p.dev, alert)
		}
		return 0
	}
	now := p.now()
	lines := p.m.frame(cols, rows-2, p.session, now)
	wait := p.m.nextTick(now)
	if p.m.head() != nil && !p.m.armed(now) {
		if arm := p.m.armedAt.Sub(now); wait == 0 || arm < wait {
			wait = arm
		}
	}
	p.mu.Unlock()
	if out := alert + p.scr.draw(lines, cols, rows); out != "" {
		if _, err := io.WriteString(p.dev, out); err != nil {
			// Nothing to do but draw the whole frame again next time; the
			// answers do not depend on the screen.
			p.scr.invalidate()
		}
	}
	return wait
}
