package serve

// Second-review tests for held asks (docs/decisions/0008-held-asks.md,
// whose consequences name them) and the escalation around them
// (escalate.go). They prove or disprove suspected defects; see the
// comment on each.

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/seed6639df8c/courier/decision"
	"github.com/seed6639df8c/courier/mailbox"
	"github.com/seed6639df8c/courier/wire"
)

// panickyWithdrawTerminal is a Holder whose Hold is well behaved but whose
// withdraw panics. Hold panicking is recovered by the broker (gate_error);
// this checks whether withdraw panicking is too.
type panickyWithdrawTerminal struct {
	asked chan string
}

func (panickyWithdrawTerminal) Decide(context.Context, Ask) decision.Decision {
	panic("Decide called on a Holder")
}

func (p panickyWithdrawTerminal) Hold(ask *Ask, done func(decision.Decision)) func(error) {
	p.asked <- ask.Request.ID
	return func(error) { panic("the terminal broke while withdrawing") }
}

const withdrawPanicEnv = "COURIER_TEST_WITHDRAW_PANIC_CHILD"

// A terminal's withdraw that panics must not take the broker down: the
// sweep (on Run's goroutine), shutdown, the prompt-timeout timer and hold
// itself call it, and the panic concludes the ask as a gate_error, as one
// in Hold or Decide does. The scenario runs in a child process (the test
// binary re-run), because a regression would kill the process.
func TestWithdrawPanicIsRecovered(t *testing.T) {
	if os.Getenv(withdrawPanicEnv) == "1" {
		withdrawPanicScenario(t)
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestWithdrawPanicIsRecovered$", "-test.v")
	cmd.Env = append(os.Environ(), withdrawPanicEnv+"=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		lines := strings.Split(string(out), "\n")
		for i, l := range lines {
			if strings.HasPrefix(l, "panic:") {
				t.Errorf("the broker process crashed when the terminal's withdraw panicked (%v):\n%s", err, strings.Join(lines[i:min(i+25, len(lines))], "\n"))
				return
			}
		}
		t.Errorf("child failed: %v\n%s", err, out)
	}
}

func withdrawPanicScenario(t *testing.T) {
	term := panickyWithdrawTerminal{asked: make(chan string, 1)}
	f := newFixtureWith(t, mailbox.Layout{Root: t.TempDir()}, term, nil)
	_, path := drop(t, f.layout, "make deploy", 0)
	<-term.asked
	// The child gives up: the next sweep withdraws the ask.
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	// The sweep withdraws it, the withdrawal panics, and the guard
	// concludes the ask: nothing is left in flight, and the broker lives.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		f.broker.mu.Lock()
		n := len(f.broker.inflight)
		f.broker.mu.Unlock()
		if n == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d asks still in flight 10s after the child left", n)
		}
	}
	os.Exit(0)
}

// slowWithdrawTerminal answers a withdrawn ask only after delay, so that
// shutdown takes longer than a heartbeat's staleness window.
type slowWithdrawTerminal struct {
	asked chan string
	delay time.Duration
}

func (slowWithdrawTerminal) Decide(context.Context, Ask) decision.Decision {
	panic("Decide called on a Holder")
}

func (s slowWithdrawTerminal) Hold(ask *Ask, done func(decision.Decision)) func(error) {
	s.asked <- ask.Request.ID
	var once sync.Once
	return func(error) {
		once.Do(func() {
			time.AfterFunc(s.delay, func() { done(decision.NobodyAnswered("withdrawn")) })
		})
	}
}

// The heartbeat stays fresh while a long shutdown waits for the held asks
// (the serve loop keeps publishing on its one ticker).
func TestHeartbeatFreshDuringLongShutdown(t *testing.T) {
	if testing.Short() {
		t.Skip("takes 7 s")
	}
	term := slowWithdrawTerminal{asked: make(chan string, 1), delay: 7 * time.Second}
	f := newFixtureWith(t, mailbox.Layout{Root: t.TempDir()}, term, func(b *Broker) { b.SweepInterval = time.Second })
	req, _ := drop(t, f.layout, "make deploy", 0)
	<-term.asked
	stopped := make(chan struct{})
	go func() { defer close(stopped); f.cancel(); <-f.done; f.done <- nil }()
	worst := time.Duration(0)
	for {
		select {
		case <-stopped:
			if worst >= 3*time.Second {
				t.Errorf("the heartbeat was %v old at worst during shutdown", worst)
			}
			if err := unavailable(ReasonSessionEnded)(readResponse(t, f.layout, req)); err != nil {
				t.Error(err)
			}
			return
		case <-time.After(100 * time.Millisecond):
		}
		s, _ := f.layout.CheckServing("parent", time.Now())
		if s.State == mailbox.ServingAbsent {
			continue // withdrawn at the very end
		}
		if age := time.Since(time.UnixMilli(s.Heartbeat.UpdatedAt)); age > worst {
			worst = age
		}
		if s.State != mailbox.ServingAlive {
			t.Errorf("heartbeat %v during shutdown", s.State)
		}
	}
}

// syncDoneTerminal answers inside Hold, before returning (the contract
// allows it), then is slow to return: this stands in for the escalation
// goroutine being preempted between Hold's return and hold's bookkeeping.
type syncDoneTerminal struct {
	asked          chan string
	returnAfter    time.Duration
	runReturned    *atomic.Bool
	lateWithdraws  atomic.Int32
	withdrawCauses chan error
}

func (*syncDoneTerminal) Decide(context.Context, Ask) decision.Decision {
	panic("Decide called on a Holder")
}

func (s *syncDoneTerminal) Hold(ask *Ask, done func(decision.Decision)) func(error) {
	done(decision.NobodyAnswered("answered inside Hold"))
	s.asked <- ask.Request.ID
	time.Sleep(s.returnAfter)
	return func(cause error) {
		if s.runReturned.Load() {
			s.lateWithdraws.Add(1)
		}
		select {
		case s.withdrawCauses <- cause:
		default:
		}
	}
}

// The escalation goroutine is not counted by escalated once done was
// called: Run (and shutdown) can return while it is still in hold, and
// it then calls the terminal's withdraw after Run returned (with the
// cause "context canceled" from settle). Shown with a delay injected in
// Hold; the natural window is a few instructions wide.
func TestEscalationOutlivesRun(t *testing.T) {
	var runReturned atomic.Bool
	term := &syncDoneTerminal{asked: make(chan string, 1), returnAfter: 300 * time.Millisecond, runReturned: &runReturned, withdrawCauses: make(chan error, 1)}
	f := newFixtureWith(t, mailbox.Layout{Root: t.TempDir()}, term, nil)
	req, _ := drop(t, f.layout, "make deploy", 0)
	<-term.asked
	readResponse(t, f.layout, req)
	f.stop()
	runReturned.Store(true)
	select {
	case cause := <-term.withdrawCauses:
		t.Logf("withdraw called with %v", cause)
	case <-time.After(2 * time.Second):
	}
	if n := term.lateWithdraws.Load(); n > 0 {
		t.Errorf("the terminal's withdraw was called %d time(s) after Run returned: the escalation goroutine outlived Run", n)
	}
}

// blockingChain defers every ask, but only once its context ends: the ask
// reaches the Holder after shutdown began.
type blockingChain struct{ entered chan struct{} }

func (c blockingChain) Resolve(ctx context.Context, _ wire.Request) (decision.Decision, bool) {
	c.entered <- struct{}{}
	<-ctx.Done()
	return decision.Decision{}, false
}

// An ask handed to Hold after shutdown began is withdrawn at once and
// answered "the session ended"; Run returns.
func TestAskHeldAfterShutdownBegan(t *testing.T) {
	q := newQueueTerminal()
	chain := blockingChain{entered: make(chan struct{}, 1)}
	f := newFixtureWith(t, mailbox.Layout{Root: t.TempDir()}, q, func(b *Broker) { b.Chain = chain })
	req, _ := drop(t, f.layout, "make deploy", 0)
	<-chain.entered
	f.stop()
	if err := unavailable(ReasonSessionEnded)(readResponse(t, f.layout, req)); err != nil {
		t.Error(err)
	}
	if n := q.count(); n != 0 {
		t.Errorf("%d asks still held", n)
	}
}

// A prompt timeout that fires before hold has kept the withdrawal (1 ns)
// still withdraws the ask and answers it for the timeout.
func TestPromptTimeoutBeforeWithdrawIsKept(t *testing.T) {
	for range 20 {
		q := newQueueTerminal()
		f := newFixtureWith(t, mailbox.Layout{Root: t.TempDir()}, q, func(b *Broker) { b.PromptTimeout = time.Nanosecond })
		req, _ := drop(t, f.layout, "make deploy", 0)
		if err := unavailable("Nobody answered the prompt within 1ns")(readResponse(t, f.layout, req)); err != nil {
			t.Error(err)
		}
		f.stop()
		if n := q.count(); n != 0 {
			t.Errorf("%d asks still held", n)
		}
	}
}
