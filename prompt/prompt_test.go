package prompt

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/seed6639df8c/courier/decision"
	"github.com/seed6639df8c/courier/serve"
)

// fakeTTY is a terminal in memory: keys are written to in, the screen is
// emulated by a vt.
type fakeTTY struct {
	in     *io.PipeReader
	keys   *io.PipeWriter
	mu     sync.Mutex
	screen *vt
	closed bool
}

func newFakeTTY(w, h int) *fakeTTY {
	r, wr := io.Pipe()
	return &fakeTTY{in: r, keys: wr, screen: newVT(w, h)}
}

func (f *fakeTTY) Read(b []byte) (int, error) { return f.in.Read(b) }
func (f *fakeTTY) Write(b []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.screen.write(string(b))
	return len(b), nil
}
func (f *fakeTTY) size() (int, int, error)   { return f.screen.w, f.screen.h, nil }
func (f *fakeTTY) resized() <-chan os.Signal { return nil }
func (f *fakeTTY) close() error {
	f.mu.Lock()
	f.closed = true
	f.mu.Unlock()
	return f.in.CloseWithError(errors.New("closed"))
}

func (f *fakeTTY) text() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var b strings.Builder
	for r := range f.screen.h {
		b.WriteString(f.screen.line(r) + "\n")
	}
	return b.String()
}

// waitScreen waits until the screen shows want.
func (f *fakeTTY) waitScreen(t *testing.T, want string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(f.text(), want) {
		if time.Now().After(deadline) {
			t.Fatalf("the screen never showed %q:\n%s", want, f.text())
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// waitScreenGone waits until the screen no longer shows gone.
func (f *fakeTTY) waitScreenGone(t *testing.T, gone string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for strings.Contains(f.text(), gone) {
		if time.Now().After(deadline) {
			t.Fatalf("the screen still shows %q:\n%s", gone, f.text())
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func (f *fakeTTY) press(t *testing.T, keys string) {
	t.Helper()
	if _, err := f.keys.Write([]byte(keys)); err != nil {
		t.Fatal(err)
	}
}

// decideAsync runs Decide on its own goroutine, as the broker does.
func decideAsync(ctx context.Context, p *Prompt, ask serve.Ask) <-chan decision.Decision {
	ch := make(chan decision.Decision, 1)
	go func() { ch <- p.Decide(ctx, ask) }()
	return ch
}

func receive(t *testing.T, ch <-chan decision.Decision) decision.Decision {
	t.Helper()
	select {
	case d := <-ch:
		return d
	case <-time.After(5 * time.Second):
		t.Fatal("Decide did not return")
		return decision.Decision{}
	}
}

// checkNoLeak fails if goroutines started during the test are still
// running a moment after it.
func checkNoLeak(t *testing.T) {
	before := runtime.NumGoroutine()
	t.Cleanup(func() {
		deadline := time.Now().Add(2 * time.Second)
		for runtime.NumGoroutine() > before {
			if time.Now().After(deadline) {
				buf := make([]byte, 1<<16)
				t.Errorf("%d goroutines left running (was %d):\n%s", runtime.NumGoroutine(), before, buf[:runtime.Stack(buf, true)])
				return
			}
			time.Sleep(5 * time.Millisecond)
		}
	})
}

func TestPromptQueueEndToEnd(t *testing.T) {
	checkNoLeak(t)
	tty := newFakeTTY(100, 30)
	p := start(tty, Options{Session: "parent", ArmDelay: -1})
	defer p.Close()
	tty.waitScreen(t, "serving session parent · no asks waiting")

	first := decideAsync(context.Background(), p, testAsk("alpha", "git push origin main", true))
	tty.waitScreen(t, "git push origin main")
	second := decideAsync(context.Background(), p, testAsk("beta", "npm install", true))
	tty.waitScreen(t, "1 more waiting")

	// The whole session for the first: s, then down, then enter (arrow
	// keys arrive as escape sequences).
	tty.press(t, "s")
	tty.waitScreen(t, "The whole session")
	tty.press(t, "\x1b[B\r")
	if d := receive(t, first); d.State != decision.StateApprovedForServingSession {
		t.Fatalf("first: %+v", d)
	}
	tty.waitScreen(t, "npm install")
	if strings.Contains(tty.text(), "more waiting") {
		t.Errorf("the count is still shown with nothing waiting:\n%s", tty.text())
	}
	// A lone ESC in the scope choice is "this subagent only".
	tty.press(t, "s")
	tty.waitScreen(t, "This subagent ('beta') only")
	tty.press(t, "\x1b")
	if d := receive(t, second); d.State != decision.StateApprovedForSession {
		t.Fatalf("second: %+v", d)
	}
	tty.waitScreen(t, "no asks waiting · 2 answered")
}

func TestPromptWithdrawnAsk(t *testing.T) {
	checkNoLeak(t)
	tty := newFakeTTY(100, 30)
	p := start(tty, Options{Session: "parent", ArmDelay: -1})
	defer p.Close()

	ctx, cancel := context.WithCancelCause(context.Background())
	gone := decideAsync(ctx, p, testAsk("alpha", "rm -rf build", true))
	tty.waitScreen(t, "rm -rf build")
	next := decideAsync(context.Background(), p, testAsk("beta", "make test", true))
	tty.waitScreen(t, "1 more waiting")
	tty.press(t, "r") // the operator starts typing a reason for alpha...
	tty.waitScreen(t, "reason >")

	cancel(errors.New("the requester gave up"))
	d := receive(t, gone)
	if !d.Unavailable() {
		t.Errorf("a withdrawn ask returned %+v, want unavailable", d)
	}
	// ...alpha's prompt disappears, beta's shows from the start.
	tty.waitScreen(t, "make test")
	tty.waitScreen(t, "left the queue: the requester gave up")
	if strings.Contains(tty.text(), "command    rm -rf build") || strings.Contains(tty.text(), "reason >") {
		t.Errorf("the withdrawn ask or its reason is still on screen:\n%s", tty.text())
	}
	tty.press(t, "r")
	tty.waitScreen(t, "reason >")
	tty.press(t, "flaky\r")
	if d := receive(t, next); d.State != decision.StateDeniedWithReason || d.DenialReason != "flaky" {
		t.Fatalf("next: %+v", d)
	}

	// A context already done never reaches the screen.
	done, stop := context.WithCancel(context.Background())
	stop()
	if d := p.Decide(done, testAsk("late", "late command", true)); !d.Unavailable() {
		t.Errorf("Decide with a done context: %+v", d)
	}
	if strings.Contains(tty.text(), "late command") {
		t.Errorf("an ask with a done context was shown")
	}
}

func TestPromptClose(t *testing.T) {
	checkNoLeak(t)
	tty := newFakeTTY(80, 24)
	p := start(tty, Options{Session: "parent", ArmDelay: -1})
	pending := decideAsync(context.Background(), p, testAsk("alpha", "deploy", true))
	tty.waitScreen(t, "deploy")

	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if d := receive(t, pending); !d.Unavailable() || d.DenialReason != ReasonClosed {
		t.Errorf("an ask pending at Close: %+v", d)
	}
	if !tty.closed {
		t.Error("Close did not close the terminal")
	}
	if strings.TrimSpace(tty.text()) != "" {
		t.Errorf("the frame is still on screen after Close:\n%s", tty.text())
	}
	if d := p.Decide(context.Background(), testAsk("beta", "x", true)); d.DenialReason != ReasonClosed {
		t.Errorf("Decide after Close: %+v", d)
	}
	if err := p.Close(); err != nil {
		t.Errorf("a second Close: %v", err)
	}
}

func TestPromptManyConcurrentAsks(t *testing.T) {
	checkNoLeak(t)
	tty := newFakeTTY(100, 30)
	p := start(tty, Options{Session: "parent", ArmDelay: -1})
	defer p.Close()

	const n = 20
	var chans []<-chan decision.Decision
	for i := range n {
		chans = append(chans, decideAsync(context.Background(), p, testAsk("a", "cmd "+string(rune('A'+i)), false)))
	}
	tty.waitScreen(t, "19 more waiting")
	for i := range n {
		if i%2 == 0 {
			tty.press(t, "y")
		} else {
			tty.press(t, "n")
		}
		// Wait for the answer to land before the next key: keys typed
		// ahead would count for whichever ask is on screen then, which is
		// fine for the operator but not for counting here.
		switch {
		case i < n-2:
			tty.waitScreen(t, fmt.Sprintf(" %d more waiting", n-2-i))
		case i == n-2:
			tty.waitScreenGone(t, "more waiting")
		}
	}
	approved := 0
	for _, ch := range chans {
		if receive(t, ch).Approved() {
			approved++
		}
	}
	if approved != n/2 {
		t.Errorf("%d approved, want %d", approved, n/2)
	}
}

func TestPromptArmsNewAsks(t *testing.T) {
	checkNoLeak(t)
	tty := newFakeTTY(100, 30)
	p := start(tty, Options{Session: "parent", ArmDelay: 400 * time.Millisecond})
	defer p.Close()

	d := decideAsync(context.Background(), p, testAsk("alpha", "git push", true))
	tty.waitScreen(t, "keys count in a moment")
	tty.press(t, "y") // too early: ignored, and said so
	tty.waitScreen(t, "ignored a key pressed as this ask appeared")
	// The footer changes when the ask arms, with no key or ask to trigger
	// a redraw.
	tty.waitScreen(t, "or press y s n r")
	tty.press(t, "n")
	if got := receive(t, d); got.State != decision.StateDenied {
		t.Fatalf("got %+v, want the armed n", got)
	}
}

// heldAsk records the fates a held ask hears.
type heldAsk struct {
	mu    sync.Mutex
	fates []decision.Decision
	heard chan struct{}
}

func newHeldAsk() *heldAsk { return &heldAsk{heard: make(chan struct{}, 16)} }

func (h *heldAsk) done(d decision.Decision) {
	h.mu.Lock()
	h.fates = append(h.fates, d)
	h.mu.Unlock()
	h.heard <- struct{}{}
}

// fate waits for the ask's fate and checks it was heard once.
func (h *heldAsk) fate(t *testing.T) decision.Decision {
	t.Helper()
	select {
	case <-h.heard:
	case <-time.After(5 * time.Second):
		t.Fatal("the ask's fate was never heard")
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.fates) != 1 {
		t.Fatalf("the ask heard %d fates: %+v", len(h.fates), h.fates)
	}
	return h.fates[0]
}

// Held asks cost no goroutine; each hears its fate once: the operator's
// answer, a withdrawal, or Close.
func TestPromptHold(t *testing.T) {
	checkNoLeak(t)
	tty := newFakeTTY(100, 30)
	p := start(tty, Options{Session: "parent", ArmDelay: -1})
	defer p.Close()
	tty.waitScreen(t, "no asks waiting")

	before := runtime.NumGoroutine()
	asks := []serve.Ask{testAsk("alpha", "git push", true), testAsk("beta", "npm install", true), testAsk("gamma", "make deploy", true)}
	held := make([]*heldAsk, len(asks))
	withdraw := make([]func(error), len(asks))
	for i := range asks {
		held[i] = newHeldAsk()
		withdraw[i] = p.Hold(&asks[i], held[i].done)
	}
	for range 100 {
		extra := testAsk("delta", "ls", false)
		p.Hold(&extra, func(decision.Decision) {})
	}
	if got := runtime.NumGoroutine(); got > before {
		t.Errorf("%d goroutines after holding 103 asks, %d before", got, before)
	}
	tty.waitScreen(t, "git push")
	tty.waitScreen(t, "102 more waiting")

	// Withdrawn while waiting: gone from the count, the screen untouched.
	withdraw[1](errors.New("the requester gave up"))
	if d := held[1].fate(t); !d.Unavailable() || !strings.Contains(d.DenialReason, "the requester gave up") {
		t.Errorf("withdrawn: %+v", d)
	}
	tty.waitScreen(t, "101 more waiting")
	withdraw[1](errors.New("again"))

	// Answered on screen; a withdrawal after the answer changes nothing.
	tty.press(t, "y")
	if d := held[0].fate(t); !d.Approved() {
		t.Errorf("answered: %+v", d)
	}
	withdraw[0](errors.New("too late"))
	tty.waitScreen(t, "make deploy")

	// Withdrawn on screen: the next shows, and a notice says why.
	withdraw[2](errors.New("prompt timeout"))
	if d := held[2].fate(t); !d.Unavailable() {
		t.Errorf("withdrawn on screen: %+v", d)
	}
	tty.waitScreen(t, "the ask from 'gamma' make deploy left the queue: prompt timeout")

	// Close answers what is still held; a Hold after it, at once.
	last := newHeldAsk()
	lastAsk := testAsk("epsilon", "rm -rf build", false)
	p.Hold(&lastAsk, last.done)
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if d := last.fate(t); d.DenialReason != ReasonClosed {
		t.Errorf("held at Close: %+v", d)
	}
	late := newHeldAsk()
	p.Hold(&lastAsk, late.done)
	if d := late.fate(t); d.DenialReason != ReasonClosed {
		t.Errorf("held after Close: %+v", d)
	}
	for i, h := range held {
		h.mu.Lock()
		if len(h.fates) != 1 {
			t.Errorf("ask %d heard %d fates: %+v", i, len(h.fates), h.fates)
		}
		h.mu.Unlock()
	}
}
